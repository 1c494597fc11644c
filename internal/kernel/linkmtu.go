package kernel

import (
	"fmt"
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

// ParseLinkMTU parses a link's sysfs mtu file: one decimal number of bytes and a newline.
func ParseLinkMTU(b []byte) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: link mtu %q is not a number of bytes", ErrMalformed, b)
	}
	return n, nil
}
