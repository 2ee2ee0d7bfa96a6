package fault

import (
	"errors"
	"io"
)

// Source reads R and keeps its failure (anything but io.EOF) in Err, so that
// the caller of a copy that failed can tell the source breaking (a client's
// body, a store's object) from the destination breaking, and answer each its
// own way.
type Source struct {
	R   io.Reader
	Err error
}

// Read reads R, keeping its failure.
func (s *Source) Read(p []byte) (int, error) {
	n, err := s.R.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		s.Err = err
	}
	return n, err
}
