package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadSysctl reads the kernel setting key, named by its path under <procRoot>/sys ("net/ipv4/ip_forward"),
// without its trailing newline.
func ReadSysctl(procRoot, key string) (string, error) {
	b, err := ReadBounded(filepath.Join(procRoot, "sys", key))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// WriteSysctl sets the kernel setting key to value.
func WriteSysctl(procRoot, key, value string) error {
	if err := os.WriteFile(filepath.Join(procRoot, "sys", key), []byte(value), 0o644); err != nil {
		return fmt.Errorf("setting %s=%s: %w", key, value, err)
	}
	return nil
}
