package filestore

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"strings"
)

// SniffLen is net/http's sniffing window: every signature Sniff knows lies
// in the first SniffLen bytes, except the entry names that tell a Word or
// Excel file from any ZIP, which are looked for in the first HeadLen bytes.
const (
	SniffLen = 512
	HeadLen  = 4096
)

// Content types Sniff answers beyond net/http's.
const (
	TypeELF        = "application/x-executable"
	TypePE         = "application/vnd.microsoft.portable-executable"
	TypeMachO      = "application/x-mach-binary"
	TypeScript     = "text/x-shellscript"
	TypeOctet      = "application/octet-stream"
	typeZIP        = "application/zip"
	typeDOCX       = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	typeXLSX       = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	typePPTX       = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	typeMP4        = "video/mp4"
	typeQuickTime  = "video/quicktime"
	typeMatroska   = "video/x-matroska"
	typeWebM       = "video/webm"
	typeHEIC       = "image/heic"
	typeHEIF       = "image/heif"
	typeAVIF       = "image/avif"
	typeTIFF       = "image/tiff"
	type3GPP       = "video/3gpp"
	type3GPP2      = "video/3gpp2"
	typeAudioMP4   = "audio/mp4"
	typeMPEGTS     = "video/mp2t"
	typeMPEG       = "video/mpeg"
	typeFLV        = "video/x-flv"
	typeASF        = "video/x-ms-asf"
	typeOggVideo   = "video/ogg"
	typeOpenDocPfx = "application/vnd.oasis.opendocument."
)

// Sniff answers the content type of a file from its first bytes (up to
// HeadLen), and whether they are an executable: an ELF, PE/MZ or Mach-O
// binary, or a script starting with "#!". It knows what
// net/http.DetectContentType knows plus the video containers, image formats
// and office documents phones and browsers upload; anything unknown is
// application/octet-stream, text is text/plain.
func Sniff(data []byte) (contentType string, executable bool) {
	if len(data) > HeadLen {
		data = data[:HeadLen]
	}
	head := data
	if len(head) > SniffLen {
		head = head[:SniffLen]
	}
	if ct := executableType(head); ct != "" {
		return ct, true
	}
	if ct := isoMediaType(head); ct != "" {
		return ct, false
	}
	if ct := otherType(head); ct != "" {
		return ct, false
	}
	ct := http.DetectContentType(head)
	switch ct {
	case typeZIP:
		return zipType(data), false
	case typeWebM:
		// net/http calls every EBML file WebM; the DocType says which it is.
		if bytes.Contains(head, []byte("matroska")) {
			return typeMatroska, false
		}
	case "application/ogg":
		if bytes.Contains(head, []byte("\x80theora")) {
			return typeOggVideo, false
		}
	}
	return ct, false
}

// Accepts tells whether a bucket takes a sniffed type (API.md: images only
// images, videos only video, files anything but executables).
func Accepts(bucket, contentType string, executable bool) bool {
	switch bucket {
	case BucketImages:
		return strings.HasPrefix(contentType, "image/") && !executable
	case BucketVideos:
		return strings.HasPrefix(contentType, "video/") && !executable
	case BucketFiles:
		return !executable
	default:
		return false
	}
}

func executableType(h []byte) string {
	switch {
	case bytes.HasPrefix(h, []byte("\x7fELF")):
		return TypeELF
	case bytes.HasPrefix(h, []byte("MZ")):
		return TypePE
	case bytes.HasPrefix(h, []byte("#!")):
		return TypeScript
	case len(h) >= 4:
		switch binary.BigEndian.Uint32(h) {
		case 0xFEEDFACE, 0xFEEDFACF, 0xCEFAEDFE, 0xCFFAEDFE:
			return TypeMachO
		case 0xCAFEBABE:
			// A universal Mach-O binary shares its magic with Java class
			// files; both are executable code.
			return TypeMachO
		}
	}
	return ""
}

// isoMediaType reads the brand of an ISO base media file (MP4, MOV, HEIC,
// AVIF, 3GP...): a first box of type "ftyp" whose major brand names the format.
func isoMediaType(h []byte) string {
	if len(h) < 12 || string(h[4:8]) != "ftyp" {
		return ""
	}
	size := int(binary.BigEndian.Uint32(h[:4]))
	if size < 12 {
		return ""
	}
	brands := []string{string(h[8:12])}
	// Compatible brands follow the minor version; a generic major brand
	// (mif1, msf1) is refined by them.
	for i := 16; i+4 <= size && i+4 <= len(h); i += 4 {
		brands = append(brands, string(h[i:i+4]))
	}
	switch major := brands[0]; {
	case major == "avif" || major == "avis":
		return typeAVIF
	case major == "heic" || major == "heix" || major == "hevc" || major == "hevx" || major == "heim" || major == "heis":
		return typeHEIC
	case major == "mif1" || major == "msf1":
		for _, b := range brands[1:] {
			switch b {
			case "avif", "avis":
				return typeAVIF
			case "heic", "heix", "hevc", "hevx":
				return typeHEIC
			}
		}
		return typeHEIF
	case major == "qt  ":
		return typeQuickTime
	case strings.HasPrefix(major, "3gp"):
		return type3GPP
	case strings.HasPrefix(major, "3g2"):
		return type3GPP2
	case major == "M4A " || major == "M4B " || major == "M4P ", major == "F4A ", major == "F4B ":
		return typeAudioMP4
	case major == "crx ":
		return "image/x-canon-cr3"
	}
	// isom, iso2..iso9, mp41, mp42, avc1, dash, M4V, MSNV, F4V and the many
	// camera brands are all MP4 video.
	return typeMP4
}

// otherType knows the formats net/http misses that do not fit elsewhere.
func otherType(h []byte) string {
	switch {
	case bytes.HasPrefix(h, []byte("II*\x00")), bytes.HasPrefix(h, []byte("MM\x00*")):
		return typeTIFF
	case bytes.HasPrefix(h, []byte("FLV\x01")):
		return typeFLV
	case bytes.HasPrefix(h, []byte("\x30\x26\xB2\x75\x8E\x66\xCF\x11")):
		return typeASF
	case bytes.HasPrefix(h, []byte("\x00\x00\x01\xBA")), bytes.HasPrefix(h, []byte("\x00\x00\x01\xB3")):
		return typeMPEG
	case len(h) >= 377 && h[0] == 0x47 && h[188] == 0x47 && h[376] == 0x47:
		// MPEG transport stream: a sync byte every 188 bytes.
		return typeMPEGTS
	}
	return ""
}

// zipType tells the ZIP-based formats apart by the names of the entries in
// the window: OOXML parts live under word/, xl/ or ppt/; OpenDocument and
// EPUB start with an uncompressed "mimetype" entry naming the type.
func zipType(h []byte) string {
	for off := 0; off+30 <= len(h); {
		if string(h[off:off+4]) != "PK\x03\x04" {
			break
		}
		flags := binary.LittleEndian.Uint16(h[off+6:])
		csize := int(binary.LittleEndian.Uint32(h[off+18:]))
		nameLen := int(binary.LittleEndian.Uint16(h[off+26:]))
		extraLen := int(binary.LittleEndian.Uint16(h[off+28:]))
		nameEnd := off + 30 + nameLen
		if nameEnd > len(h) {
			break
		}
		name := string(h[off+30 : nameEnd])
		switch {
		case strings.HasPrefix(name, "word/"):
			return typeDOCX
		case strings.HasPrefix(name, "xl/"):
			return typeXLSX
		case strings.HasPrefix(name, "ppt/"):
			return typePPTX
		case name == "mimetype":
			start := nameEnd + extraLen
			if end := start + csize; csize > 0 && csize <= 100 && end <= len(h) {
				mt := string(h[start:end])
				if (strings.HasPrefix(mt, typeOpenDocPfx) && isToken(mt)) || mt == "application/epub+zip" {
					return mt
				}
			}
		}
		next := nameEnd + extraLen + csize
		if flags&0x08 != 0 {
			// The sizes follow the data (streamed ZIPs): look for the next
			// header's signature instead. A false match only mislabels a ZIP.
			i := bytes.Index(h[nameEnd:], []byte("PK\x03\x04"))
			if i < 0 {
				break
			}
			next = nameEnd + i
		}
		off = next
	}
	return typeZIP
}

// isToken tells whether a media type read from a file is plain enough to be
// sent back as a Content-Type header.
func isToken(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-', r == '+', r == '/':
		default:
			return false
		}
	}
	return true
}
