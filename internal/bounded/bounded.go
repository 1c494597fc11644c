package bounded

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/tare-dev/tare/internal/output"
)

// ErrTooLarge says a peer sent more than the bound.
var ErrTooLarge = errors.New("more than tare reads")

// Reader reads r up to limit bytes; a read past them fails with an error wrapping ErrTooLarge that names
// what (the peer and what it sent: "the agent's /summary").
func Reader(r io.Reader, limit int64, what string) io.Reader {
	return &reader{r: r, left: limit, limit: limit, what: what}
}

type reader struct {
	r           io.Reader
	left, limit int64
	what        string
}

func (b *reader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more says whether the body ends at the bound or goes on.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%s is larger than %s, %w: a broken or hostile peer", b.what, output.Limit(b.limit), ErrTooLarge)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// Transport bounds the body of every response rt returns (named by its request's host and path).
func Transport(rt http.RoundTripper, limit int64) http.RoundTripper {
	return transport{rt: rt, limit: limit}
}

type transport struct {
	rt    http.RoundTripper
	limit int64
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = Body(resp.Body, t.limit, "the answer of "+req.URL.Host+req.URL.Path)
	return resp, nil
}

// Body is body read through Reader, closed as body is.
func Body(body io.ReadCloser, limit int64, what string) io.ReadCloser {
	return readCloser{Reader: Reader(body, limit, what), Closer: body}
}

type readCloser struct {
	io.Reader
	io.Closer
}
