package httpx

import (
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
)

// Stream writes src as the body of the answer whose status and headers are
// set, and answers how many bytes it wrote. A source that hands its bytes to
// a writer's ReadFrom (a local file's download body: io.WriterTo) reaches
// the server's writer beneath gin's, whose connection has the kernel copy a
// file (sendfile) under the server's write deadlines. That is done only while
// c.Writer is gin's own writer: a middleware that wrapped it (to keep or
// measure the body) gets every byte through its Write. gin counts only the bytes
// it writes, so the others are kept on c for the access log (bodyBytes).
func Stream(c *gin.Context, src io.Reader) (int64, error) {
	c.Writer.WriteHeaderNow()
	rf := serverReaderFrom(c.Writer)
	if rf == nil {
		return io.Copy(c.Writer, src)
	}
	d := &direct{Writer: c.Writer, rf: rf}
	n, err := io.Copy(d, src)
	if d.sent > 0 {
		c.Set(sentKey, d.sent)
	}
	return n, err
}

// sentKey is the gin key of the bytes Stream wrote past gin's writer.
const sentKey = "agritrade.sent"

// bodyBytes is the size of the answer's body: what gin's writer wrote, and
// what Stream wrote past it.
func bodyBytes(c *gin.Context) int {
	n := c.Writer.Size()
	if sent, ok := c.Get(sentKey); ok {
		n += int(sent.(int64))
	}
	return n
}

// direct writes through gin's writer and reads from a source through the
// server's ReadFrom, counting those bytes.
type direct struct {
	io.Writer
	rf   io.ReaderFrom
	sent int64
}

func (d *direct) ReadFrom(src io.Reader) (int64, error) {
	n, err := d.rf.ReadFrom(src)
	d.sent += n
	return n, err
}

// serverReaderFrom is the ReadFrom of the writer beneath w, when w is gin's
// own writer: its Unwrap answers the server's writer. A middleware's wrapper
// unwraps to gin's writer, which has no ReadFrom, so that the bytes go
// through the wrapper.
func serverReaderFrom(w gin.ResponseWriter) io.ReaderFrom {
	u, ok := w.(interface{ Unwrap() http.ResponseWriter })
	if !ok {
		return nil
	}
	rf, _ := u.Unwrap().(io.ReaderFrom)
	return rf
}
