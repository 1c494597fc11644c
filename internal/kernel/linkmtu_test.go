package kernel

import (
	"errors"
	"os"
	"testing"
)

func TestLinkMTU(t *testing.T) {
	t.Parallel()
	if n, err := LinkMTU(fixtureSys, "lo"); err != nil || n != 65536 {
		t.Errorf("LinkMTU(fixture, lo) = %d, %v; want 65536", n, err)
	}
	if _, err := LinkMTU(fixtureSys, "nosuchlink"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LinkMTU of a missing link: %v, want os.ErrNotExist", err)
	}
}

func TestParseLinkMTU(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"1500\n": 1500, "9000": 9000, "65536\n": 65536} {
		if got, err := ParseLinkMTU([]byte(in)); err != nil || got != want {
			t.Errorf("ParseLinkMTU(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1\n", "1500 bytes\n"} {
		if got, err := ParseLinkMTU([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseLinkMTU(%q) = %d, %v; want ErrMalformed", bad, got, err)
		}
	}
}
