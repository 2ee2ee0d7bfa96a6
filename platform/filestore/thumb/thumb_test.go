package thumb_test

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	_ "image/gif"
	"image/jpeg"
	"testing"

	"github.com/agritrade/api/platform/filestore/thumb"
	"github.com/agritrade/api/platform/filestore/thumb/thumbtest"
	"github.com/disintegration/imaging"
)

func TestParse(t *testing.T) {
	good := map[string]thumb.Spec{
		"100x100":  {W: 100, H: 100},
		"300x200f": {W: 300, H: 200, Fit: true},
		"600x0":    {W: 600},
		"0x400":    {H: 400},
		"4096x1":   {W: 4096, H: 1},
	}
	for s, want := range good {
		got, err := thumb.Parse(s)
		if err != nil || got != want || got.String() != s {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "100", "100x", "x100", "0x0", "0x100f", "100x0f", "4097x10", "-1x10", "+1x10",
		"10X10", "10x10ff", "1e2x10", " 10x10", "10x10 ", "00010x10", "10x10F"} {
		if _, err := thumb.Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

// decode answers the thumbnail's format and pixels.
func decode(t *testing.T, data []byte) (string, image.Image) {
	t.Helper()
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode the thumbnail: %v", err)
	}
	return format, img
}

func thumbOf(t *testing.T, src []byte, size string) ([]byte, string) {
	t.Helper()
	spec, err := thumb.Parse(size)
	if err != nil {
		t.Fatal(err)
	}
	data, ct, err := thumb.Make(bytes.NewReader(src), spec, 50_000_000)
	if err != nil {
		t.Fatalf("Make(%s): %v", size, err)
	}
	return data, ct
}

// TestMake_Dimensions: each mode's size exactly, for a wide and a tall
// source, and no enlargement where the mode says so.
func TestMake_Dimensions(t *testing.T) {
	wide := thumbtest.JPEG(thumbtest.Gradient(1600, 900))
	tall := thumbtest.JPEG(thumbtest.Gradient(600, 1000))
	small := thumbtest.JPEG(thumbtest.Gradient(80, 60))
	cases := []struct {
		name, size string
		src        []byte
		w, h       int
	}{
		{"fill wide", "300x300", wide, 300, 300},
		{"fill tall", "300x300", tall, 300, 300},
		{"fill oblong box", "400x100", tall, 400, 100},
		{"fill enlarges", "100x100", small, 100, 100},
		{"fit wide", "300x300f", wide, 300, 168},
		{"fit tall", "300x300f", tall, 180, 300},
		{"fit small kept", "300x300f", small, 80, 60},
		{"width keeps ratio", "600x0", wide, 600, 337},
		{"width of tall", "300x0", tall, 300, 500},
		{"height keeps ratio", "0x450", wide, 800, 450},
		{"width small kept", "1200x0", small, 80, 60},
		{"height small kept", "0x100", small, 80, 60},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, ct := thumbOf(t, c.src, c.size)
			format, img := decode(t, data)
			if ct != thumb.JPEG || format != "jpeg" {
				t.Fatalf("type %s, format %s; want JPEG", ct, format)
			}
			if b := img.Bounds(); b.Dx() != c.w || b.Dy() != c.h {
				t.Fatalf("%s of %s: %dx%d, want %dx%d", c.size, c.name, b.Dx(), b.Dy(), c.w, c.h)
			}
		})
	}
}

// TestMake_FillCropsAroundTheCentre: filling a square from a wide picture
// whose left half is red and right half blue keeps both halves, evenly.
func TestMake_FillCropsAroundTheCentre(t *testing.T) {
	data, _ := thumbOf(t, thumbtest.PNG(thumbtest.Halves(400, 100)), "100x100")
	_, img := decode(t, data)
	if !reddish(img.At(5, 50)) || !bluish(img.At(94, 50)) {
		t.Fatalf("left %v, right %v: want red then blue", img.At(5, 50), img.At(94, 50))
	}
}

// TestMake_EXIFOrientation: a JPEG stored 400x200 (red left, blue right)
// with orientation 6 is shown turned 90° clockwise: 200x400, red on top.
func TestMake_EXIFOrientation(t *testing.T) {
	src := thumbtest.WithOrientation(thumbtest.JPEG(thumbtest.Halves(400, 200)), 6)
	if cfg, err := jpeg.DecodeConfig(bytes.NewReader(src)); err != nil || cfg.Width != 400 {
		t.Fatalf("the fixture is not a 400-wide JPEG: %+v %v", cfg, err)
	}
	data, _ := thumbOf(t, src, "100x0")
	_, img := decode(t, data)
	if b := img.Bounds(); b.Dx() != 100 || b.Dy() != 200 {
		t.Fatalf("%dx%d; want 100x200 (turned)", b.Dx(), b.Dy())
	}
	if !reddish(img.At(50, 10)) || !bluish(img.At(50, 190)) {
		t.Fatalf("top %v, bottom %v: want red on top", img.At(50, 10), img.At(50, 190))
	}
	// Without the tag the same picture stays wide.
	data, _ = thumbOf(t, thumbtest.JPEG(thumbtest.Halves(400, 200)), "100x0")
	if _, img = decode(t, data); img.Bounds().Dx() != 100 || img.Bounds().Dy() != 50 {
		t.Fatalf("untagged: %v; want 100x50", img.Bounds())
	}
}

// TestMake_TransparencyAnswersPNG: a PNG with transparent pixels gives a
// PNG that keeps them; an opaque PNG gives a JPEG.
func TestMake_TransparencyAnswersPNG(t *testing.T) {
	data, ct := thumbOf(t, thumbtest.PNG(thumbtest.Transparent(200, 200)), "100x100")
	format, img := decode(t, data)
	if ct != thumb.PNG || format != "png" {
		t.Fatalf("type %s, format %s; want PNG", ct, format)
	}
	if _, _, _, a := img.At(10, 50).RGBA(); a != 0 {
		t.Fatalf("the transparent half has alpha %d", a)
	}
	if _, _, _, a := img.At(90, 50).RGBA(); a != 0xffff {
		t.Fatalf("the opaque half has alpha %d", a)
	}
	if _, ct = thumbOf(t, thumbtest.PNG(thumbtest.Halves(200, 200)), "100x100"); ct != thumb.JPEG {
		t.Fatalf("an opaque PNG gave %s", ct)
	}
}

// TestMake_GIFAndWebP: both decode; the WebP with alpha gives a PNG.
func TestMake_GIFAndWebP(t *testing.T) {
	data, ct := thumbOf(t, thumbtest.GIF(thumbtest.Halves(200, 100)), "100x0")
	if _, img := decode(t, data); ct != thumb.JPEG || img.Bounds().Dx() != 100 || img.Bounds().Dy() != 50 {
		t.Fatalf("GIF: %s %v", ct, img.Bounds())
	}
	data, ct = thumbOf(t, thumbtest.OpaqueWebP, "40x0")
	if _, img := decode(t, data); ct != thumb.JPEG || img.Bounds().Dx() != 40 || img.Bounds().Dy() != 30 {
		t.Fatalf("opaque WebP: %s %v", ct, img.Bounds())
	}
	data, ct = thumbOf(t, thumbtest.AlphaWebP, "20x20")
	format, img := decode(t, data)
	if ct != thumb.PNG || format != "png" || img.Bounds().Dx() != 20 {
		t.Fatalf("WebP with alpha: %s %s %v", ct, format, img.Bounds())
	}
}

// TestMake_RefusesBombsBeforeDecoding: a PNG header claiming 100000 x
// 100000 pixels is refused on the header (decoding would need 40 GB).
func TestMake_RefusesBombsBeforeDecoding(t *testing.T) {
	_, _, err := thumb.Make(bytes.NewReader(thumbtest.BombPNG(100000, 100000)), thumb.Spec{W: 100, H: 100}, 50_000_000)
	var tl *thumb.TooLargeError
	if !errors.As(err, &tl) || tl.Width != 100000 || tl.Height != 100000 {
		t.Fatalf("err %v; want TooLargeError 100000x100000", err)
	}
	// Just over a small limit is refused too; at the limit it is made.
	src := thumbtest.PNG(thumbtest.Halves(100, 100))
	if _, _, err := thumb.Make(bytes.NewReader(src), thumb.Spec{W: 10, H: 10}, 9_999); !errors.As(err, &tl) {
		t.Fatalf("over the limit: %v", err)
	}
	if _, _, err := thumb.Make(bytes.NewReader(src), thumb.Spec{W: 10, H: 10}, 10_000); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
}

// TestMake_RefusesWhatIsNotAnImage: text, a truncated image and a format
// other than the four (BMP, which imaging's decoders would read).
func TestMake_RefusesWhatIsNotAnImage(t *testing.T) {
	full := thumbtest.JPEG(thumbtest.Gradient(64, 64))
	bmp := []byte("BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x18\x00\x00\x00\x00\x00\x04\x00\x00\x00\x13\x0b\x00\x00\x13\x0b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\x00\x00\x00")
	for name, src := range map[string][]byte{"text": []byte("hello, not a picture"), "truncated": full[:len(full)/2], "bmp": bmp} {
		if _, _, err := thumb.Make(bytes.NewReader(src), thumb.Spec{W: 10, H: 10}, 50_000_000); !errors.Is(err, thumb.ErrNotImage) {
			t.Errorf("%s: err %v; want ErrNotImage", name, err)
		}
	}
}

// TestMake_EveryEXIFOrientation: for each of the eight orientations the
// thumbnail is the one imaging's own AutoOrientation decoder gives (the
// reference): same size, same colour in each quadrant of a four-colour
// picture, for a fitting box and a filling one.
func TestMake_EveryEXIFOrientation(t *testing.T) {
	quads := image.NewNRGBA(image.Rect(0, 0, 400, 200))
	colours := []color.NRGBA{{220, 20, 20, 255}, {20, 220, 20, 255}, {20, 20, 220, 255}, {220, 220, 20, 255}}
	for y := range 200 {
		for x := range 400 {
			quads.SetNRGBA(x, y, colours[x/200+2*(y/100)])
		}
	}
	plain := thumbtest.JPEG(quads)
	for o := uint16(1); o <= 8; o++ {
		src := thumbtest.WithOrientation(plain, o)
		ref, err := imaging.Decode(bytes.NewReader(src), imaging.AutoOrientation(true))
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []string{"100x100f", "80x60"} {
			data, _ := thumbOf(t, src, size)
			_, img := decode(t, data)
			spec, _ := thumb.Parse(size)
			var want *image.NRGBA
			if spec.Fit {
				want = imaging.Fit(ref, spec.W, spec.H, imaging.Lanczos)
			} else {
				want = imaging.Fill(ref, spec.W, spec.H, imaging.Center, imaging.Lanczos)
			}
			if img.Bounds().Size() != want.Bounds().Size() {
				t.Fatalf("orientation %d, %s: %v; imaging gives %v", o, size, img.Bounds().Size(), want.Bounds().Size())
			}
			w, h := want.Bounds().Dx(), want.Bounds().Dy()
			for _, p := range []image.Point{{w / 4, h / 4}, {3 * w / 4, h / 4}, {w / 4, 3 * h / 4}, {3 * w / 4, 3 * h / 4}} {
				if !near(img.At(p.X, p.Y), want.At(p.X, p.Y)) {
					t.Fatalf("orientation %d, %s, at %v: %v; imaging gives %v", o, size, p, img.At(p.X, p.Y), want.At(p.X, p.Y))
				}
			}
		}
	}
}

// near compares colours within what JPEG coding changes.
func near(a, b color.Color) bool {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	d := func(x, y uint32) bool { return x-y < 0x2000 || y-x < 0x2000 }
	return d(ar, br) && d(ag, bg) && d(ab, bb)
}

// TestMake_ShrinksYCbCrAndGrayInTheirOwnSamples: large JPEG reductions (the
// block-averaging path) keep colours and gray levels.
func TestMake_ShrinksYCbCrAndGrayInTheirOwnSamples(t *testing.T) {
	data, _ := thumbOf(t, thumbtest.JPEG(thumbtest.Halves(1000, 500)), "100x0")
	_, img := decode(t, data)
	if img.Bounds().Dx() != 100 || img.Bounds().Dy() != 50 || !reddish(img.At(10, 25)) || !bluish(img.At(90, 25)) {
		t.Fatalf("colour JPEG: %v, %v, %v", img.Bounds(), img.At(10, 25), img.At(90, 25))
	}
	gray := image.NewGray(image.Rect(0, 0, 999, 501))
	for i := range gray.Pix {
		gray.Pix[i] = 77
	}
	data, _ = thumbOf(t, thumbtest.JPEG(gray), "100x100")
	_, img = decode(t, data)
	if r, g, b, _ := img.At(50, 50).RGBA(); img.Bounds().Dx() != 100 || r>>8 < 74 || r>>8 > 80 || r != g || g != b {
		t.Fatalf("gray JPEG: %v, %v", img.Bounds(), img.At(50, 50))
	}
}

func reddish(c color.Color) bool {
	r, _, b, _ := c.RGBA()
	return r > 0x9000 && b < 0x6000
}

func bluish(c color.Color) bool {
	r, _, b, _ := c.RGBA()
	return b > 0x9000 && r < 0x6000
}

// TestMakeAll_SameBytesAsMakeForEachSize: one decode for every size gives
// exactly what a making per size gives, in the order asked, EXIF turn included.
func TestMakeAll_SameBytesAsMakeForEachSize(t *testing.T) {
	src := thumbtest.WithOrientation(thumbtest.JPEG(thumbtest.Halves(800, 400)), 6)
	var specs []thumb.Spec
	for _, s := range []string{"100x100", "300x300", "600x0", "0x50"} {
		spec, err := thumb.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	all, err := thumb.MakeAll(bytes.NewReader(src), specs, 50_000_000)
	if err != nil || len(all) != len(specs) {
		t.Fatalf("MakeAll: %d made, %v", len(all), err)
	}
	for i, spec := range specs {
		one, ct, err := thumb.Make(bytes.NewReader(src), spec, 50_000_000)
		if err != nil {
			t.Fatal(err)
		}
		if all[i].Spec != spec || all[i].ContentType != ct || !bytes.Equal(all[i].Data, one) {
			t.Errorf("size %s: MakeAll gave %s %d bytes, Make %s %d bytes", spec, all[i].ContentType, len(all[i].Data), ct, len(one))
		}
	}
}
