package thumb_test

import (
	"bytes"
	"errors"
	"image"
	"testing"

	"github.com/agritrade/api/platform/filestore/thumb"
	"github.com/agritrade/api/platform/filestore/thumb/thumbtest"
)

// FuzzMake: whatever the bytes, Make answers an error or a decodable
// thumbnail within the box, never panics, and never decodes past the pixel
// limit (the limit here is small, so a mutated header claiming more is
// refused before any allocation).
func FuzzMake(f *testing.F) {
	small := thumbtest.Halves(40, 30)
	for _, seed := range [][]byte{
		thumbtest.JPEG(small), thumbtest.WithOrientation(thumbtest.JPEG(small), 6), thumbtest.PNG(small),
		thumbtest.PNG(thumbtest.Transparent(20, 20)), thumbtest.GIF(small), thumbtest.OpaqueWebP, thumbtest.AlphaWebP,
		thumbtest.BombPNG(100000, 100000), []byte("not an image"),
	} {
		f.Add(seed, uint16(16), uint16(16), false)
	}
	f.Fuzz(func(t *testing.T, src []byte, w, h uint16, fit bool) {
		spec, err := thumb.Parse(thumb.Spec{W: int(w % 64), H: int(h % 64), Fit: fit}.String())
		if err != nil {
			return
		}
		data, ct, err := thumb.Make(bytes.NewReader(src), spec, 1<<16)
		var tl *thumb.TooLargeError
		if err != nil {
			if !errors.Is(err, thumb.ErrNotImage) && !errors.As(err, &tl) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || "image/"+format != ct {
			t.Fatalf("the thumbnail does not decode as %s: %v", ct, err)
		}
		if (spec.W > 0 && cfg.Width > spec.W) || (spec.H > 0 && cfg.Height > spec.H) || cfg.Width < 1 || cfg.Height < 1 {
			t.Fatalf("%s gave %dx%d", spec, cfg.Width, cfg.Height)
		}
	})
}
