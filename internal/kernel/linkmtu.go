package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LinkMTU reads the MTU, in bytes, of the network link name in this network namespace, from
// <sysRoot>/class/net/<name>/mtu. A link that does not exist gives an error matching os.ErrNotExist; a file
// that is not one number, ErrMalformed.
func LinkMTU(sysRoot, name string) (int, error) {
	path := filepath.Join(sysRoot, "class", "net", name, "mtu")
	b, err := ReadBounded(path)
	if err != nil {
		return 0, err
	}
	n, err := ParseLinkMTU(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// HasLink says whether this network namespace has a link named name (<sysRoot>/class/net/<name>).
func HasLink(sysRoot, name string) bool {
	_, err := os.Stat(filepath.Join(sysRoot, "class", "net", name))
	return err == nil
}

// ParseLinkMTU parses a link's sysfs mtu file: one decimal number of bytes and a newline.
func ParseLinkMTU(b []byte) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: link mtu %q is not a number of bytes", ErrMalformed, b)
	}
	return n, nil
}
