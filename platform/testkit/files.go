package testkit

import (
	"io/fs"
	"path/filepath"
	"testing"
)

// FilesUnder lists every regular file below root (slash-separated, relative),
// temporary ones included: tests use it to prove nothing was left behind.
func FilesUnder(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
