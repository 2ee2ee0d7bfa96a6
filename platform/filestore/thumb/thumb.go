// Package thumb makes one thumbnail of one image: the size grammar of the
// `thumb` query parameter (API.md "Thumbnails"), and the pixels (decode,
// orient, scale, crop, encode). It knows nothing of storage or permissions:
// filestore keeps the thumbnails beside their files and decides who may
// ask for them.
//
// Read top to bottom: Spec and Parse (what a size means), Make (the whole
// work, in order), then its steps.
package thumb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // registers the GIF decoder with package image
	"image/jpeg"
	"image/png"
	"io"
	"strconv"
	"strings"

	"github.com/disintegration/imaging"
	_ "golang.org/x/image/webp" // registers the WebP decoder with package image
)

// Spec is one thumbnail size.
//
//   - W and H both set, Fit false ("300x300"): scaled to fill the box, then
//     cropped to exactly W x H around the centre (tiles of a grid).
//   - W and H both set, Fit true ("300x300f"): scaled to fit inside the box,
//     the whole picture kept; one side is shorter than asked.
//   - W or H zero ("600x0", "0x400"): that side follows the picture's ratio.
//
// Fitting and ratio-keeping never enlarge a picture smaller than the box: it
// is answered at its own size. Filling always answers exactly W x H.
type Spec struct {
	W, H int
	Fit  bool
}

// MaxSide bounds each side of a size: a thumbnail is not a resampler.
const MaxSide = 4096

// Parse reads "WxH", "WxHf", "Wx0" or "0xH".
func Parse(s string) (Spec, error) {
	body, fit := strings.CutSuffix(s, "f")
	ws, hs, ok := strings.Cut(body, "x")
	if !ok {
		return Spec{}, fmt.Errorf("thumbnail size %q: want WxH, WxHf, Wx0 or 0xH", s)
	}
	w, errW := side(ws)
	h, errH := side(hs)
	switch {
	case errW != nil || errH != nil:
		return Spec{}, fmt.Errorf("thumbnail size %q: each side is a whole number from 0 to %d", s, MaxSide)
	case w == 0 && h == 0:
		return Spec{}, fmt.Errorf("thumbnail size %q: at most one side may be 0", s)
	case fit && (w == 0 || h == 0):
		return Spec{}, fmt.Errorf("thumbnail size %q: fitting (f) needs both sides", s)
	}
	return Spec{W: w, H: h, Fit: fit}, nil
}

func side(s string) (int, error) {
	if s == "" || len(s) > 4 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a side")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > MaxSide {
		return 0, errors.New("not a side")
	}
	return n, nil
}

// String is the canonical form, the one Parse reads ("300x300f").
func (s Spec) String() string {
	out := strconv.Itoa(s.W) + "x" + strconv.Itoa(s.H)
	if s.Fit {
		out += "f"
	}
	return out
}

// Sources are the content types (as filestore sniffs them) a thumbnail can be
// made of.
var Sources = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// formats are the decoders Make accepts, by the name image.DecodeConfig
// answers. imaging also registers BMP and TIFF; those are refused.
var formats = map[string]bool{"jpeg": true, "png": true, "gif": true, "webp": true}

// The two kinds of answer.
const (
	JPEG = "image/jpeg"
	PNG  = "image/png"
)

// Ext is the file extension of a thumbnail's content type.
func Ext(contentType string) string {
	if contentType == PNG {
		return ".png"
	}
	return ".jpg"
}

// ErrNotImage is answered for content no decoder accepts (or a format other
// than the four), or an image that breaks off while it is decoded.
var ErrNotImage = errors.New("thumb: not a JPEG, PNG, GIF or WebP image")

// TooLargeError is answered, before any pixel is decoded, for an image whose
// header claims more pixels than allowed (a decompression bomb: a few KiB
// of PNG can claim 100000 x 100000, and decoding would allocate 40 GB).
type TooLargeError struct {
	Width, Height int
	Max           int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the image has %d x %d pixels, more than the %d allowed", e.Width, e.Height, e.Max)
}

// maxHeader bounds what DecodeConfig may read before the image's size is
// known. A JPEG may put metadata before its frame header (EXIF, ICC
// profiles: tens of KiB in practice); more than this is not a photo.
const maxHeader = 1 << 20

// jpegQuality is a common web quality: no visible loss at thumbnail sizes.
const jpegQuality = 85

// Make reads an image from r and answers the thumbnail of spec, encoded:
// JPEG, or PNG when the thumbnail has transparent pixels. maxPixels (> 0)
// bounds the source's width x height; it is checked on the header alone.
//
// The steps: read the header (size, format, a JPEG's EXIF orientation)
// while keeping its bytes; refuse a format other than the four and an image
// over the limit; decode the rest (the kept bytes first); scale and crop;
// turn as the orientation says; encode. An animated GIF gives its first
// frame.
//
// Memory: the decoded source (4 bytes a pixel for PNG, GIF and WebP with
// alpha, 1.5 to 3 for JPEG and opaque WebP) plus the scaled copies; at the
// default limit of 50 M pixels that is up to about 250 MB for one call.
// Callers bound how many run at once (filestore's thumbnail semaphore).
func Make(r io.Reader, spec Spec, maxPixels int64) ([]byte, string, error) {
	made, err := MakeAll(r, []Spec{spec}, maxPixels)
	if err != nil {
		return nil, "", err
	}
	return made[0].Data, made[0].ContentType, nil
}

// Made is one thumbnail of MakeAll: its size, encoded bytes and type.
type Made struct {
	Spec        Spec
	Data        []byte
	ContentType string
}

// MakeAll is Make for several sizes of one image, in the order given, from
// one decode: the decode is most of a first thumbnail's cost (a 12 MP JPEG
// takes hundreds of milliseconds; each scaling from it tens), so making
// every size at once costs little more than making one.
func MakeAll(r io.Reader, specs []Spec, maxPixels int64) ([]Made, error) {
	var head bytes.Buffer
	cfg, format, err := image.DecodeConfig(io.TeeReader(io.LimitReader(r, maxHeader), &head))
	if err != nil || !formats[format] {
		return nil, ErrNotImage
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return nil, ErrNotImage
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return nil, &TooLargeError{Width: cfg.Width, Height: cfg.Height, Max: maxPixels}
	}
	// The orientation is in the header already read (EXIF comes before a
	// JPEG's frame). It is applied to the thumbnail, not to the source:
	// turning a 12 MP photo costs more than making its thumbnail. Scaling and
	// centred cropping commute with turns and flips, once the box is turned
	// too (orientations 5 to 8 swap width and height).
	orient := 1
	if format == "jpeg" {
		orient = exifOrientation(head.Bytes())
	}
	src, _, err := image.Decode(io.MultiReader(&head, r))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotImage, err)
	}
	if src.Bounds().Empty() {
		return nil, ErrNotImage
	}
	out := make([]Made, 0, len(specs))
	for _, spec := range specs {
		data, ct, err := render(src, spec, orient)
		if err != nil {
			return nil, err
		}
		out = append(out, Made{Spec: spec, Data: data, ContentType: ct})
	}
	return out, nil
}

// render scales, turns and encodes one thumbnail of a decoded source.
func render(src image.Image, spec Spec, orient int) ([]byte, string, error) {
	box := spec
	if orient >= 5 {
		box.W, box.H = spec.H, spec.W
	}
	out := orientate(scale(src, box), orient)
	var buf bytes.Buffer
	if opaque(out) {
		// Opaque NRGBA pixels are their own premultiplied RGBA: handing the
		// encoder an *image.RGBA takes its fast path (the generic one
		// allocates for every pixel).
		rgba := &image.RGBA{Pix: out.Pix, Stride: out.Stride, Rect: out.Rect}
		err := jpeg.Encode(&buf, rgba, &jpeg.Options{Quality: jpegQuality})
		return buf.Bytes(), JPEG, err
	}
	err := png.Encode(&buf, out)
	return buf.Bytes(), PNG, err
}

// scale answers the thumbnail's pixels. A large reduction is done in two
// steps: averaging k x k blocks (area averaging: one addition per source
// sample, the cheapest sound reduction there is) down to between one and two
// times the target, then Catmull-Rom for the last factor, which is where the
// sharpness is decided. One Catmull-Rom pass over a 12 MP photo costs several
// times the averaging for no visible gain. A decoded JPEG (YCbCr, or gray) is
// averaged plane by plane in its own samples, without converting 12 M pixels
// to RGBA first; other images through imaging's box filter.
func scale(src image.Image, s Spec) *image.NRGBA {
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	w, h := target(sw, sh, s)
	// The size the picture is scaled to before cropping (fill): the side
	// that fills its box decides, the other overflows and is cropped.
	rw, rh := w, h
	if !s.Fit && s.W > 0 && s.H > 0 {
		if sw*h > sh*w { // wider than the box
			rw, rh = max(1, sw*h/sh), h
		} else {
			rw, rh = w, max(1, sh*w/sw)
		}
	}
	if k := min(sw/rw, sh/rh); k >= 2 {
		switch img := src.(type) {
		case *image.YCbCr:
			src = shrinkYCbCr(img, k)
		case *image.Gray:
			src = shrinkGray(img, k)
		default:
			if k >= 3 {
				src = imaging.Resize(src, 2*rw, 2*rh, imaging.Box)
			}
		}
	}
	out := imaging.Resize(src, rw, rh, imaging.CatmullRom)
	if rw != w || rh != h {
		out = imaging.CropAnchor(out, w, h, imaging.Center)
	}
	return out
}

// target is the thumbnail's size for a source of sw x sh (see Spec).
func target(sw, sh int, s Spec) (int, int) {
	switch {
	case !s.Fit && s.W > 0 && s.H > 0:
		return s.W, s.H
	case s.Fit:
		if sw <= s.W && sh <= s.H {
			return sw, sh
		}
		if sw*s.H > sh*s.W { // wider than the box: the width decides
			return s.W, max(1, sh*s.W/sw)
		}
		return max(1, sw*s.H/sh), s.H
	case s.W > 0:
		if sw <= s.W {
			return sw, sh
		}
		return s.W, max(1, sh*s.W/sw)
	default:
		if sh <= s.H {
			return sw, sh
		}
		return max(1, sw*s.H/sh), s.H
	}
}

// opaque tells whether every pixel is fully opaque (then JPEG is the
// smaller answer).
func opaque(img *image.NRGBA) bool {
	for i := 3; i < len(img.Pix); i += 4 {
		if img.Pix[i] != 0xff {
			return false
		}
	}
	return true
}

// shrinkYCbCr averages k x k blocks of each plane: the luma plane of the
// picture, and the chroma planes in their own (subsampled) grid, which keeps
// the subsampling. Pixels past the last whole block are dropped (less than k
// at the right and bottom edges).
func shrinkYCbCr(src *image.YCbCr, k int) *image.YCbCr {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dst := image.NewYCbCr(image.Rect(0, 0, sw/k, sh/k), src.SubsampleRatio)
	b := src.Rect
	boxPlane(dst.Y, dst.YStride, sw/k, sh/k, src.Y[src.YOffset(b.Min.X, b.Min.Y):], src.YStride, sw, sh, k)
	// The chroma samples that cover the picture, in both images.
	first := src.COffset(b.Min.X, b.Min.Y)
	last := src.COffset(b.Max.X-1, b.Max.Y-1) - first
	scw, sch := last%src.CStride+1, last/src.CStride+1
	dl := dst.COffset(dst.Rect.Max.X-1, dst.Rect.Max.Y-1)
	dcw, dch := dl%dst.CStride+1, dl/dst.CStride+1
	boxPlane(dst.Cb, dst.CStride, dcw, dch, src.Cb[first:], src.CStride, scw, sch, k)
	boxPlane(dst.Cr, dst.CStride, dcw, dch, src.Cr[first:], src.CStride, scw, sch, k)
	return dst
}

// shrinkGray averages k x k blocks of a gray picture.
func shrinkGray(src *image.Gray, k int) *image.Gray {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dst := image.NewGray(image.Rect(0, 0, sw/k, sh/k))
	boxPlane(dst.Pix, dst.Stride, sw/k, sh/k, src.Pix[src.PixOffset(src.Rect.Min.X, src.Rect.Min.Y):], src.Stride, sw, sh, k)
	return dst
}

// boxPlane writes into the dw x dh plane dst the averages of the k x k
// blocks of the sw x sh plane src (blocks cut short at src's edges; a
// block starting past them repeats the last sample).
func boxPlane(dst []byte, dstride, dw, dh int, src []byte, sstride, sw, sh, k int) {
	sums := make([]uint32, dw)
	for y := range dh {
		clear(sums)
		y0 := min(y*k, sh-1)
		y1 := min(y0+k, sh)
		for sy := y0; sy < y1; sy++ {
			row := src[sy*sstride : sy*sstride+sw]
			for x := range dw {
				x0 := min(x*k, sw-1)
				var sum uint32
				for _, v := range row[x0:min(x0+k, sw)] {
					sum += uint32(v)
				}
				sums[x] += sum
			}
		}
		out := dst[y*dstride : y*dstride+dw]
		for x := range dw {
			x0 := min(x*k, sw-1)
			n := uint32((y1 - y0) * (min(x0+k, sw) - x0)) //nolint:gosec // at most k*k
			out[x] = byte((sums[x] + n/2) / n)            //nolint:gosec // an average of bytes is a byte
		}
	}
}

// orientate turns and flips a thumbnail as its source's EXIF orientation
// says (the same transforms as imaging.Decode's AutoOrientation; imaging
// turns counter-clockwise, so "rotate 90° clockwise" (6) is Rotate270).
func orientate(img *image.NRGBA, orientation int) *image.NRGBA {
	switch orientation {
	case 2:
		return imaging.FlipH(img)
	case 3:
		return imaging.Rotate180(img)
	case 4:
		return imaging.FlipV(img)
	case 5:
		return imaging.Transpose(img)
	case 6:
		return imaging.Rotate270(img)
	case 7:
		return imaging.Transverse(img)
	case 8:
		return imaging.Rotate90(img)
	}
	return img
}

// exifOrientation reads the Orientation tag (1 to 8) of a JPEG's EXIF
// segment from the start of the file; 1 when there is none or it is
// malformed. Only IFD0 is read, where cameras put it.
func exifOrientation(b []byte) int {
	if len(b) < 4 || b[0] != 0xff || b[1] != 0xd8 {
		return 1
	}
	b = b[2:]
	for len(b) >= 4 && b[0] == 0xff {
		marker, size := b[1], int(binary.BigEndian.Uint16(b[2:4]))
		if size < 2 || len(b) < 2+size {
			return 1
		}
		seg := b[4 : 2+size]
		b = b[2+size:]
		switch {
		case marker == 0xe1 && len(seg) >= 14 && string(seg[:6]) == "Exif\x00\x00":
			return tiffOrientation(seg[6:])
		case marker == 0xda || marker == 0xc0 || marker == 0xc2:
			return 1 // image data or the frame: no EXIF before it
		}
	}
	return 1
}

// tiffOrientation finds tag 0x0112 in the first IFD of a TIFF structure.
func tiffOrientation(t []byte) int {
	var order binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return 1
	}
	off := int(order.Uint32(t[4:8]))
	if off < 8 || off+2 > len(t) {
		return 1
	}
	n := int(order.Uint16(t[off:]))
	for i := range n {
		e := off + 2 + 12*i
		if e+12 > len(t) {
			return 1
		}
		if order.Uint16(t[e:]) == 0x0112 {
			if v := int(order.Uint16(t[e+8:])); v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}
