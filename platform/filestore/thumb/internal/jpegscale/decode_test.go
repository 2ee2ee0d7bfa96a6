package jpegscale_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"

	"github.com/agritrade/api/platform/filestore/thumb/internal/jpegscale"
)

// sources are image/jpeg's own test pictures (testdata, copied from Go's
// src/image/testdata: every subsampling, progressive, restart intervals,
// CMYK, RGB, gray) and two generated photo-like ones of odd sizes.
func sources(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	names, err := filepath.Glob("testdata/*.jpeg")
	if err != nil || len(names) < 10 {
		t.Fatalf("testdata: %d files, %v", len(names), err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = b
	}
	photo := image.NewNRGBA(image.Rect(0, 0, 333, 221))
	gray := image.NewGray(image.Rect(0, 0, 203, 97))
	seed := uint32(2463534242)
	for i := range photo.Pix {
		seed ^= seed << 13
		seed ^= seed >> 17
		seed ^= seed << 5
		photo.Pix[i] = byte(i/4%333 + int(seed&63))
		if i%4 == 3 {
			photo.Pix[i] = 0xff
		}
		if i < len(gray.Pix) {
			gray.Pix[i] = byte(i%203 + int(seed&31))
		}
	}
	for name, img := range map[string]image.Image{"generated 420": photo, "generated gray": gray} {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		out[name] = buf.Bytes()
	}
	return out
}

// TestDecodeScaled_FullSizeIsImageJPEG: at scale 1 the copy answers what
// image/jpeg answers, pixel for pixel, for every kind of JPEG.
func TestDecodeScaled_FullSizeIsImageJPEG(t *testing.T) {
	for name, src := range sources(t) {
		want, err := jpeg.Decode(bytes.NewReader(src))
		if err != nil {
			t.Fatalf("%s: image/jpeg: %v", name, err)
		}
		got, err := jpegscale.DecodeScaled(bytes.NewReader(src), 1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Bounds() != want.Bounds() || got.ColorModel() != want.ColorModel() {
			t.Fatalf("%s: %v %T; image/jpeg %v %T", name, got.Bounds(), got, want.Bounds(), want)
		}
		b := want.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if got.At(x, y) != want.At(x, y) {
					t.Fatalf("%s at (%d, %d): %v; image/jpeg %v", name, x, y, got.At(x, y), want.At(x, y))
				}
			}
		}
	}
}

// TestDecodeScaled_SamplesAreBlockMeans: at 1/2, 1/4 and 1/8 each side is
// rounded up, and each sample of each plane is the mean of the s x s
// samples of the full decode it covers: exactly at 1/2 and 1/4; at 1/8
// (the DC term: the mean before each pixel is clipped to 0..255) within a
// few levels, more on the hard edges of the quality-50 pictures.
func TestDecodeScaled_SamplesAreBlockMeans(t *testing.T) {
	for name, src := range sources(t) {
		full, err := jpeg.Decode(bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []int{2, 4, 8} {
			got, err := jpegscale.DecodeScaled(bytes.NewReader(src), s)
			if err != nil {
				t.Fatalf("%s at 1/%d: %v", name, s, err)
			}
			fb := full.Bounds()
			if w, h := (fb.Dx()+s-1)/s, (fb.Dy()+s-1)/s; got.Bounds() != image.Rect(0, 0, w, h) {
				t.Fatalf("%s at 1/%d: %v, want %dx%d", name, s, got.Bounds(), w, h)
			}
			for _, p := range planes(t, full, got) {
				comparePlane(t, name, s, p)
			}
		}
	}
}

// TestDecodeScales_EachAsAlone: several scales from one decode answer, each,
// exactly what a decode at that scale alone answers.
func TestDecodeScales_EachAsAlone(t *testing.T) {
	for name, src := range sources(t) {
		scales := []int{8, 2, 1, 4}
		all, err := jpegscale.DecodeScales(bytes.NewReader(src), scales)
		if err != nil || len(all) != len(scales) {
			t.Fatalf("%s: %d images, %v", name, len(all), err)
		}
		for i, s := range scales {
			one, err := jpegscale.DecodeScaled(bytes.NewReader(src), s)
			if err != nil {
				t.Fatal(err)
			}
			if one.Bounds() != all[i].Bounds() {
				t.Fatalf("%s at 1/%d: %v, alone %v", name, s, all[i].Bounds(), one.Bounds())
			}
			b := one.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					if one.At(x, y) != all[i].At(x, y) {
						t.Fatalf("%s at 1/%d, (%d, %d): %v, alone %v", name, s, x, y, all[i].At(x, y), one.At(x, y))
					}
				}
			}
		}
	}
}

// TestDecodeScaled_RefusesOtherScalesAndBrokenData: a scale other than 1,
// 2, 4, 8 and a truncated or foreign stream are errors, not images.
func TestDecodeScaled_RefusesOtherScalesAndBrokenData(t *testing.T) {
	src := sources(t)["video-001.q50.420.jpeg"]
	for _, s := range []int{0, 3, 16, -1} {
		if _, err := jpegscale.DecodeScaled(bytes.NewReader(src), s); err == nil {
			t.Errorf("scale %d: no error", s)
		}
	}
	for _, bad := range [][]byte{src[:len(src)/2], []byte("GIF89a not a jpeg"), nil} {
		if _, err := jpegscale.DecodeScaled(bytes.NewReader(bad), 8); err == nil {
			t.Errorf("%d bytes of broken data: no error", len(bad))
		}
	}
}

// plane is one channel of a full decode and of a scaled one, as rows of
// samples in their own grid.
type plane struct {
	name      string
	full, got []byte
	fs, gs    int // strides
	fw, fh    int // the full plane's size, in samples
	gw, gh    int
	converted bool // RGB or CMYK, converted from the decoded planes
}

func planes(t *testing.T, full, got image.Image) []plane {
	t.Helper()
	switch f := full.(type) {
	case *image.YCbCr:
		g := got.(*image.YCbCr)
		if g.SubsampleRatio != f.SubsampleRatio {
			t.Fatalf("subsampling %v, full %v", g.SubsampleRatio, f.SubsampleRatio)
		}
		fcw, fch := chroma(f)
		gcw, gch := chroma(g)
		return []plane{
			{"Y", f.Y, g.Y, f.YStride, g.YStride, f.Rect.Dx(), f.Rect.Dy(), g.Rect.Dx(), g.Rect.Dy(), false},
			{"Cb", f.Cb, g.Cb, f.CStride, g.CStride, fcw, fch, gcw, gch, false},
			{"Cr", f.Cr, g.Cr, f.CStride, g.CStride, fcw, fch, gcw, gch, false},
		}
	case *image.Gray:
		g := got.(*image.Gray)
		return []plane{{"gray", f.Pix, g.Pix, f.Stride, g.Stride, f.Rect.Dx(), f.Rect.Dy(), g.Rect.Dx(), g.Rect.Dy(), false}}
	}
	// RGBA (an RGB JPEG) and CMYK: 4 bytes a pixel, converted from the
	// decoded planes, the others of which may be subsampled (then a pixel's
	// value comes from a sample covering other pixels at each scale): the
	// first channel, never subsampled, is compared.
	fp, fs := pix(full)
	gp, gs := pix(got)
	fw, fh := full.Bounds().Dx(), full.Bounds().Dy()
	gw, gh := got.Bounds().Dx(), got.Bounds().Dy()
	return []plane{{"channel 0", every4(fp), every4(gp), fs / 4, gs / 4, fw, fh, gw, gh, true}}
}

func chroma(m *image.YCbCr) (int, int) {
	last := m.COffset(m.Rect.Max.X-1, m.Rect.Max.Y-1)
	return last%m.CStride + 1, last/m.CStride + 1
}

func pix(m image.Image) ([]byte, int) {
	switch m := m.(type) {
	case *image.RGBA:
		return m.Pix, m.Stride
	case *image.CMYK:
		return m.Pix, m.Stride
	}
	panic("unexpected image type")
}

func every4(p []byte) []byte {
	out := make([]byte, 0, len(p)/4)
	for i := 0; i < len(p); i += 4 {
		out = append(out, p[i])
	}
	return out
}

// comparePlane checks the samples whose s x s block lies inside the full
// plane (edge blocks also hold the encoder's padding).
func comparePlane(t *testing.T, name string, s int, p plane) {
	t.Helper()
	for y := 0; y < p.gh && (y+1)*s <= p.fh; y++ {
		for x := 0; x < p.gw && (x+1)*s <= p.fw; x++ {
			sum := 0
			for yy := y * s; yy < (y+1)*s; yy++ {
				for xx := x * s; xx < (x+1)*s; xx++ {
					sum += int(p.full[yy*p.fs+xx])
				}
			}
			mean := (sum + s*s/2) / (s * s)
			if d := int(p.got[y*p.gs+x]) - mean; d < -tol(s, p.converted) || d > tol(s, p.converted) {
				t.Fatalf("%s at 1/%d, %s (%d, %d): %d, mean of the full decode %d", name, s, p.name, x, y, p.got[y*p.gs+x], mean)
			}
		}
	}
}

// tol is how far a sample may be from the mean: 0 at 1/2 and 1/4, 1 for
// channels converted after decoding (CMYK's 255-v flips a rounding).
func tol(s int, converted bool) int {
	switch {
	case s == 8:
		return 4
	case converted:
		return 1
	}
	return 0
}
