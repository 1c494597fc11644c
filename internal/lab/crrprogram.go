package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// CRRName is tare's connect/request/response load program (images/crr): under /usr/bin in ToolsImage, and
// built into the cache for the host path of tare datapath (CRRProgram).
const CRRName = "tare-crr"

// crrSource is the program's source and the digest naming its build.
func crrSource() (src []byte, key string, err error) {
	if src, err = imageSources.ReadFile("images/crr/main.go"); err != nil {
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
	tmp, err := os.CreateTemp(filepath.Dir(path), CRRName+".tmp*")
	if err != nil {
		return "", fmt.Errorf("caching %s: %w", CRRName, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.Write(bin)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o755)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("caching %s: %w", CRRName, err)
	}
	removeOtherArchives(path, CRRName+"-")
	return path, nil
}
