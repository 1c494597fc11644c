package lab

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// tareMain is the main package of tare's own binary, the one program the tare image holds.
const (
	tareModule = "github.com/tare-dev/tare"
	tareMain   = tareModule + "/cmd/tare"
)

// TareImageArchive returns the path of the tare image's OCI archive (TareImage: tare at /tare, run as the
// entrypoint), building it into the cache when missing. The image holds the running tare binary when it is
// a static Linux executable (`make build` builds it with CGO_ENABLED=0), so the agent on the cluster is the
// tare that deployed it; otherwise, as in tests, tare is built from the module's source the current
// directory lies in. The archive is named for the binary's digest and replaces the one of an older binary.
func TareImageArchive(ctx context.Context) (string, error) {
	bin, cleanup, err := tareBinary(ctx)
	if err != nil {
		return "", err
	}
	defer cleanup()
	archive, err := tareArchivePath(bin)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(archive); err == nil {
		return archive, nil
	}
	prog, err := fileProgram(bin)
	if err != nil {
		return "", err
	}
	if err := writeArchiveFile(archive, TareImage, TareImage.binaryLayer(prog)); err != nil {
		return "", err
	}
	removeOtherArchives(archive, "tare-")
	return archive, nil
}

// tareImageCached says whether the tare image is already in the cache: the running tare's, or, when the
// running program is not a static tare (a test), any tare's, since building tare from unchanged source is
// itself served from Go's build cache and gives the same binary.
func tareImageCached() bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	if staticTare(exe) != nil {
		cache, err := CacheDir()
		if err != nil {
			return false
		}
		found, _ := filepath.Glob(filepath.Join(cache, "images", "tare-*.tar"))
		return len(found) > 0
	}
	archive, err := tareArchivePath(exe)
	if err != nil {
		return false
	}
	_, err = os.Stat(archive)
	return err == nil
}

// tareArchivePath is where the image of the tare binary at bin is cached: named for the binary's digest.
func tareArchivePath(bin string) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	f, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	h.Write([]byte(TareImage.Name + "\x00"))
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", bin, err)
	}
	return filepath.Join(cache, "images", "tare-"+hex.EncodeToString(h.Sum(nil)[:6])+".tar"), nil
}

// removeOtherArchives deletes the cached files named prefix* with keep's extension other than keep: the
// images of other tare binaries (tens of megabytes each), of other versions of the datapath tools, or
// builds of other tare-crr sources.
func removeOtherArchives(keep, prefix string) {
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(keep), prefix+"*"+filepath.Ext(keep)))
	for _, p := range old {
		if p != keep {
			_ = os.Remove(p)
		}
	}
}

// tareBinary is the static tare binary the image holds, and a function removing it if it was built here.
func tareBinary(ctx context.Context) (path string, cleanup func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("finding the running tare binary: %w", err)
	}
	notStatic := staticTare(exe)
	if notStatic == nil {
		return exe, func() {}, nil
	}
	dir, err := tareSourceDir(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("the tare image holds a static tare binary, and %w; and there is no tare source here to build one from (%w): "+
			"build tare with CGO_ENABLED=0 (make build) and run that binary", notStatic, err)
	}
	return buildTare(ctx, dir)
}

// errNotStatic says a binary cannot run alone in an image of one file.
var errNotStatic = errors.New("not a static tare binary")

// staticTare checks that the program at path is tare's main package, built for Linux with no dynamic
// loader (CGO_ENABLED=0): the only file in its image, it has no libc to load.
func staticTare(path string) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s is %w: %w", path, errNotStatic, err)
	}
	if info.Path != tareMain {
		return fmt.Errorf("%s is %w: it is %s", path, errNotStatic, info.Path)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is %w: %w", path, errNotStatic, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is %w: it is linked dynamically (built with cgo)", path, errNotStatic)
		}
	}
	return nil
}

// tareSourceDir is the root of tare's module when the current directory lies in it.
func tareSourceDir(ctx context.Context) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no Go on PATH: %w", ErrPrerequisite)
	}
	out, err := exec.CommandContext(ctx, gobin, "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %w", err)
	}
	mod, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if mod != tareModule || dir == "" {
		return "", fmt.Errorf("the current directory is in module %q, not %s", mod, tareModule)
	}
	return dir, nil
}

// buildTare builds tare from its source at dir as `make build` does, static, into a temporary directory.
func buildTare(ctx context.Context, dir string) (path string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "tare-image-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	path = filepath.Join(tmp, "tare")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", path, "./cmd/tare")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building tare for its image in %s: %w\n%s", dir, err, tail(out, 10))
	}
	return path, cleanup, nil
}
