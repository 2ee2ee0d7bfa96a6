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
// The steps: read the header (size, format) while keeping its bytes; refuse
// a format other than the four and an image over the limit; decode the rest
// (the kept bytes first), turning it as its EXIF orientation says; scale
// and crop; encode.
//
// Memory: the decoded source (4 bytes a pixel for PNG, GIF and WebP with
// alpha, 1.5 to 3 for JPEG and opaque WebP) plus the scaled copies; at the
// default limit of 50 M pixels that is up to about 250 MB for one call.
// Callers bound how many run at once (filestore's thumbnail semaphore).
func Make(r io.Reader, spec Spec, maxPixels int64) ([]byte, string, error) {
	var head bytes.Buffer
	cfg, format, err := image.DecodeConfig(io.TeeReader(io.LimitReader(r, maxHeader), &head))
	if err != nil || !formats[format] {
		return nil, "", ErrNotImage
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return nil, "", &TooLargeError{Width: cfg.Width, Height: cfg.Height, Max: maxPixels}
	}
	src, err := imaging.Decode(io.MultiReader(&head, r), imaging.AutoOrientation(true))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNotImage, err)
	}
	out := scale(src, spec)
	var buf bytes.Buffer
	if opaque(out) {
		// Opaque NRGBA pixels are their own premultiplied RGBA: handing the
		// encoder an *image.RGBA takes its fast path (the generic one
		// allocates for every pixel).
		rgba := &image.RGBA{Pix: out.Pix, Stride: out.Stride, Rect: out.Rect}
		err = jpeg.Encode(&buf, rgba, &jpeg.Options{Quality: jpegQuality})
		return buf.Bytes(), JPEG, err
	}
	err = png.Encode(&buf, out)
	return buf.Bytes(), PNG, err
}

// scale answers the thumbnail's pixels. A large reduction is done in two
// steps: a box filter (one tap per source pixel, the cheapest resampling
// there is) down to twice the target, then Catmull-Rom for the last factor
// of two, which is where the sharpness is decided. One Catmull-Rom pass over
// a 12 MP photo costs about four times the box pass for no visible gain.
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
	if sw > 3*rw && sh > 3*rh {
		src = imaging.Resize(src, 2*rw, 2*rh, imaging.Box)
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
