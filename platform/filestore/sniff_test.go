package filestore_test

import (
	"archive/zip"
	"bytes"
	"mime"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/filestore"
)

// zipOf builds a ZIP with the named entries, as archive/zip writes them
// (sizes in data descriptors after each entry, as streaming writers do).
func zipOf(t testing.TB, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, n := range names {
		f, err := w.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write([]byte(strings.Repeat("<xml>content of "+n+"</xml>", 20)))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// odfOf builds an OpenDocument file: a first, stored "mimetype" entry.
func odfOf(t testing.TB, mediaType string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	f, err := w.CreateRaw(&zip.FileHeader{Name: "mimetype", Method: zip.Store, CompressedSize64: uint64(len(mediaType)), UncompressedSize64: uint64(len(mediaType))})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte(mediaType))
	g, _ := w.Create("content.xml")
	_, _ = g.Write([]byte("<office:document-content/>"))
	_ = w.Close()
	return buf.Bytes()
}

func TestSniff(t *testing.T) {
	pad := func(b string) []byte { return append([]byte(b), make([]byte, 64)...) }
	cases := []struct {
		name string
		data []byte
		want string
		exec bool
	}{
		{"jpeg", pad("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), "image/jpeg", false},
		{"png", pad("\x89PNG\r\n\x1a\n"), "image/png", false},
		{"gif", pad("GIF89a"), "image/gif", false},
		{"webp", pad("RIFF\x24\x00\x00\x00WEBPVP8 "), "image/webp", false},
		{"tiff", pad("II*\x00\x08\x00\x00\x00"), "image/tiff", false},
		{"heic", pad("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"), "image/heic", false},
		{"heif via mif1", pad("\x00\x00\x00\x10ftypmif1\x00\x00\x00\x00"), "image/heif", false},
		{"avif", pad("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf"), "image/avif", false},
		{"avif via mif1", pad("\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1avif"), "image/avif", false},
		{"mp4 isom", pad("\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2avc1mp41"), "video/mp4", false},
		{"mp4 from a phone", pad("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), "video/mp4", false},
		{"quicktime", pad("\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00qt  "), "video/quicktime", false},
		{"3gp", pad("\x00\x00\x00\x14ftyp3gp4\x00\x00\x00\x00isom"), "video/3gpp", false},
		{"m4a", pad("\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00isom"), "audio/mp4", false},
		{"webm", pad("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm"), "video/webm", false},
		{"matroska", pad("\x1a\x45\xdf\xa3\xa3\x42\x86\x81\x01\x42\x82\x88matroska"), "video/x-matroska", false},
		{"avi", pad("RIFF\x00\x00\x00\x00AVI LIST"), "video/avi", false},
		{"flv", pad("FLV\x01\x05\x00\x00\x00\x09"), "video/x-flv", false},
		{"wmv", pad("\x30\x26\xb2\x75\x8e\x66\xcf\x11\xa6\xd9"), "video/x-ms-asf", false},
		{"mpeg", pad("\x00\x00\x01\xba\x44\x00"), "video/mpeg", false},
		{"pdf", pad("%PDF-1.7\n"), "application/pdf", false},
		{"docx", zipOf(t, "[Content_Types].xml", "_rels/.rels", "word/document.xml"), "application/vnd.openxmlformats-officedocument.wordprocessingml.document", false},
		{"xlsx", zipOf(t, "[Content_Types].xml", "xl/workbook.xml"), "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", false},
		{"pptx", zipOf(t, "[Content_Types].xml", "ppt/presentation.xml"), "application/vnd.openxmlformats-officedocument.presentationml.presentation", false},
		{"odt", odfOf(t, "application/vnd.oasis.opendocument.text"), "application/vnd.oasis.opendocument.text", false},
		{"odf with a header-breaking type", odfOf(t, "application/vnd.oasis.opendocument.\r\nX-Evil: 1"), "application/zip", false},
		{"zip", zipOf(t, "a.txt", "b.txt"), "application/zip", false},
		{"text", []byte("hello"), "text/plain; charset=utf-8", false},
		{"binary", []byte{0, 1, 2, 3, 0xfe}, "application/octet-stream", false},
		{"elf", pad("\x7fELF\x02\x01\x01"), filestore.TypeELF, true},
		{"pe", pad("MZ\x90\x00\x03"), filestore.TypePE, true},
		{"mach-o 64", pad("\xcf\xfa\xed\xfe"), filestore.TypeMachO, true},
		{"mach-o 32 big-endian", pad("\xfe\xed\xfa\xce"), filestore.TypeMachO, true},
		{"mach-o universal", pad("\xca\xfe\xba\xbe"), filestore.TypeMachO, true},
		{"shebang", []byte("#!/bin/bash\necho hi\n"), filestore.TypeScript, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, exec := filestore.Sniff(c.data)
			if got != c.want || exec != c.exec {
				t.Fatalf("Sniff = %q, %v; want %q, %v", got, exec, c.want, c.exec)
			}
		})
	}
}

func TestAccepts(t *testing.T) {
	cases := []struct {
		bucket, ct string
		exec, want bool
	}{
		{"images", "image/png", false, true},
		{"images", "video/mp4", false, false},
		{"images", "text/plain; charset=utf-8", false, false},
		{"videos", "video/quicktime", false, true},
		{"videos", "audio/mp4", false, false},
		{"videos", "image/png", false, false},
		{"files", "application/pdf", false, true},
		{"files", "image/png", false, true},
		{"files", filestore.TypeELF, true, false},
		{"files", filestore.TypeScript, true, false},
		{"unknown", "image/png", false, false},
	}
	for _, c := range cases {
		if got := filestore.Accepts(c.bucket, c.ct, c.exec); got != c.want {
			t.Errorf("Accepts(%q, %q, %v) = %v", c.bucket, c.ct, c.exec, got)
		}
	}
}

// FuzzSniff: any bytes give a well-formed media type that can go in a
// header, the same answer twice, executables refused by every bucket, and
// the answer depends only on the first HeadLen bytes.
func FuzzSniff(f *testing.F) {
	for _, seed := range []string{"", "\x7fELF", "MZ", "#!", "\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00avif", "PK\x03\x04",
		"\x1a\x45\xdf\xa3matroska", "%PDF-", "GIF89a", "RIFF\x00\x00\x00\x00WEBPVP8 ", "\x47" + strings.Repeat("\x00", 187) + "\x47"} {
		f.Add([]byte(seed))
	}
	f.Add(zipOf(f, "[Content_Types].xml", "word/document.xml"))
	f.Add(odfOf(f, "application/vnd.oasis.opendocument.spreadsheet"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ct, exec := filestore.Sniff(data)
		if ct2, exec2 := filestore.Sniff(data); ct2 != ct || exec2 != exec {
			t.Fatalf("not deterministic: %q/%v then %q/%v", ct, exec, ct2, exec2)
		}
		if _, _, err := mime.ParseMediaType(ct); err != nil {
			t.Fatalf("Sniff = %q: %v", ct, err)
		}
		if strings.ContainsAny(ct, "\r\n") {
			t.Fatalf("Sniff = %q breaks a header", ct)
		}
		for _, b := range filestore.Buckets {
			if exec && filestore.Accepts(b, ct, exec) {
				t.Fatalf("bucket %s accepts executable %q", b, ct)
			}
		}
		if len(data) > filestore.HeadLen {
			if ct3, _ := filestore.Sniff(data[:filestore.HeadLen]); ct3 != ct {
				t.Fatalf("looked past HeadLen: %q vs %q", ct, ct3)
			}
		}
	})
}
