package httpx

import "testing"

func TestETagMatches(t *testing.T) {
	tag := StrongETag([]byte("body"))
	if tag == StrongETag([]byte("body2")) || len(tag) != 34 || tag[0] != '"' {
		t.Fatalf("tag %s", tag)
	}
	for _, c := range []struct {
		header string
		want   bool
	}{
		{"", false}, {tag, true}, {"W/" + tag, true}, {`"x", ` + tag, true}, {"*", true}, {`"x"`, false}, {tag[1:], false},
	} {
		if got := ETagMatches(c.header, tag); got != c.want {
			t.Errorf("ETagMatches(%q) = %v, want %v", c.header, got, c.want)
		}
	}
}
