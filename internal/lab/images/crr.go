package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tare-dev/tare/internal/userfile"
)

// CRRName is tare's connect/request/response load program (crr/main.go): under /usr/bin in Tools, and
// built into the cache for the host path of tare datapath (CRRProgram).
const CRRName = "tare-crr"

// crrSource is the program's source and the digest naming its build.
func crrSource() (src []byte, key string, err error) {
	if src, err = imageSources.ReadFile("crr/main.go"); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(src)
	return src, hex.EncodeToString(sum[:6]), nil
}

// CRRProgram returns the path of tare-crr built from this tare's source, building it into the cache
// (with Go, as the lab's small images are) when missing. Builds of older sources are removed.
func CRRProgram(ctx context.Context) (string, error) {
	src, key, err := crrSource()
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, "bin", CRRName+"-"+key)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return path, nil
	}
	bin, err := buildStatic(ctx, CRRName, src)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("caching %s: %w", CRRName, err)
	}
	err = userfile.WriteMode(path, 0o755, func(w io.Writer) error { _, err := w.Write(bin); return err })
	if err != nil {
		return "", fmt.Errorf("caching %s: %w", CRRName, err)
	}
	removeOtherArchives(path, CRRName+"-")
	return path, nil
}
