// Package thumbtest builds the images thumbnail tests and benchmarks need,
// in memory: plain JPEG, PNG and GIF pictures, a JPEG with an EXIF
// orientation, a PNG with transparency, and a "decompression bomb" header.
// WebP cannot be encoded with the Go libraries: two small files made with
// cwebp (Debian package webp) from Go-drawn PNGs are embedded.
package thumbtest

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
)

// Halves is a w x h picture whose left half is red and right half blue, so
// that a test can tell which way it was turned.
func Halves(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{R: 220, B: 20, A: 255}
			if x >= w/2 {
				c = color.NRGBA{R: 20, B: 220, A: 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// Gradient is a w x h photo-like picture (smooth colours, so that JPEG
// sizes and timings are those of a photo rather than of a flat area).
func Gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := (y*w + x) * 4
			img.Pix[i] = byte(x * 255 / max(1, w-1) & 0xff)
			img.Pix[i+1] = byte(y * 255 / max(1, h-1) & 0xff)
			img.Pix[i+2] = byte((x ^ y) & 0xff)
			img.Pix[i+3] = 0xff
		}
	}
	return img
}

// Noisy is Gradient with per-pixel grain (up to ±16 per channel): its JPEG
// is about as large as a camera's (around 0.3 bytes a pixel at quality 90
// rather than 0.05), and decoding cost grows with the coded size.
func Noisy(w, h int) *image.NRGBA {
	img := Gradient(w, h)
	seed := uint32(2463534242)
	for i := 0; i < len(img.Pix); i += 4 {
		for c := range 3 {
			seed ^= seed << 13
			seed ^= seed >> 17
			seed ^= seed << 5
			v := int(img.Pix[i+c]) + int(seed&31) - 16
			img.Pix[i+c] = byte(min(255, max(0, v)))
		}
	}
	return img
}

// JPEG encodes img as a JPEG.
func JPEG(img image.Image) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// PNG encodes img as a PNG.
func PNG(img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// GIF encodes img as a GIF (Plan 9 palette).
func GIF(img image.Image) []byte {
	var buf bytes.Buffer
	if err := gif.Encode(&buf, img, nil); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Transparent is a w x h picture whose left half is fully transparent.
func Transparent(w, h int) *image.NRGBA {
	img := Halves(w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w/2; x++ {
			img.Pix[(y*w+x)*4+3] = 0
		}
	}
	return img
}

// WithOrientation inserts an EXIF APP1 segment with the given orientation
// tag (1 to 8; 6: the camera was turned, show it rotated 90° clockwise)
// right after the JPEG's start-of-image marker. The segment is written by
// hand: "Exif\0\0", a big-endian TIFF header, and one IFD of one entry.
func WithOrientation(jpg []byte, orientation uint16) []byte {
	var tiff bytes.Buffer
	tiff.WriteString("MM\x00\x2a")                            // big-endian TIFF, magic 42
	_ = binary.Write(&tiff, binary.BigEndian, uint32(8))      // offset of the first IFD
	_ = binary.Write(&tiff, binary.BigEndian, uint16(1))      // one entry
	_ = binary.Write(&tiff, binary.BigEndian, uint16(0x0112)) // tag: Orientation
	_ = binary.Write(&tiff, binary.BigEndian, uint16(3))      // type: SHORT
	_ = binary.Write(&tiff, binary.BigEndian, uint32(1))      // count
	_ = binary.Write(&tiff, binary.BigEndian, orientation)    // value, left-justified
	_ = binary.Write(&tiff, binary.BigEndian, uint16(0))      // padding of the 4-byte value field
	_ = binary.Write(&tiff, binary.BigEndian, uint32(0))      // no next IFD
	payload := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	seg := []byte{0xff, 0xe1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2)) //nolint:gosec // a few dozen bytes; the length counts itself
	seg = append(seg, payload...)
	out := append([]byte{}, jpg[:2]...) // SOI
	out = append(out, seg...)
	return append(out, jpg[2:]...)
}

// BombPNG is the start of a PNG whose header claims w x h pixels: a few
// dozen bytes that would decode to w*h*4 bytes. Only the signature and a
// valid IHDR chunk (CRC included) are there: enough for image.DecodeConfig.
func BombPNG(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8 bits, RGBA
	out := []byte("\x89PNG\r\n\x1a\n")
	out = binary.BigEndian.AppendUint32(out, 13) // IHDR's length
	chunk := append([]byte("IHDR"), ihdr...)
	out = append(out, chunk...)
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
	// An IDAT start, so that sniffers see more than a header.
	return append(out, 0, 0, 0, 0, 'I', 'D', 'A', 'T', 0x35, 0xaf, 0x06, 0x1e)
}

// OpaqueWebP is an 80 x 60 lossy WebP without alpha (cwebp -q 80).
//
//go:embed testdata/opaque-80x60.webp
var OpaqueWebP []byte

// AlphaWebP is a 40 x 40 lossless WebP whose left half is transparent
// (cwebp -lossless).
//
//go:embed testdata/alpha-40x40.webp
var AlphaWebP []byte
