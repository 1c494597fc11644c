package images

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

	"github.com/tare-dev/tare/internal/output"
)

// tareMain is the main package of tare's own binary, the one program the tare image holds.
const (
	tareModule = "github.com/tare-dev/tare"
	tareMain   = tareModule + "/cmd/tare"
)

// TareArchive returns the path of the tare image's OCI archive (Tare: tare at /tare, run as the
// entrypoint), building it into the cache when missing. The image holds the running tare binary, so the
// agent on the cluster is the tare that deployed it: alone when it is a static Linux executable (`make
// build` builds it with CGO_ENABLED=0), with its dynamic loader and shared libraries when it was built with
// cgo (`go install`, or `go build` where a C compiler exists). Only a program that is not tare (a test) has
// tare built from the module's source the current directory lies in. The archive is named for its files'
// digest and replaces the one of an older binary.
func TareArchive(ctx context.Context) (string, error) {
	img, cleanup, err := tareImageFiles(ctx)
	if err != nil {
		return "", err
	}
	defer cleanup()
	if _, err := os.Stat(img.archive); err == nil {
		return img.archive, nil
	}
	if err := writeArchiveFile(img.archive, Tare, img.layer); err != nil {
		return "", err
	}
	removeOtherArchives(img.archive, "tare-")
	return img.archive, nil
}

// tareImage is what the tare image holds and where its archive is cached.
type tareImage struct {
	layer   []layerFile
	archive string
}

// tareImageFiles finds the files of the tare image (see TareArchive), and a function removing a tare
// built for it.
func tareImageFiles(ctx context.Context) (tareImage, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return tareImage{}, nil, fmt.Errorf("finding the running tare binary: %w", err)
	}
	notStatic := staticTare(exe)
	if notStatic != nil && isTare(exe) {
		img, err := dynamicTareImage(ctx, exe)
		return img, func() {}, err
	}
	bin, cleanup := exe, func() {}
	if notStatic != nil {
		dir, err := tareSourceDir(ctx)
		if err != nil {
			return tareImage{}, nil, fmt.Errorf("the tare image holds a tare binary, and %w; and there is no tare source here to build one from (%w): "+
				"run the image's verbs with a tare binary (make build, go install or go build)", notStatic, err)
		}
		if bin, cleanup, err = buildTare(ctx, dir); err != nil {
			return tareImage{}, nil, err
		}
	}
	archive, err := tareArchivePath(bin)
	if err != nil {
		cleanup()
		return tareImage{}, nil, err
	}
	prog, err := fileProgram(bin)
	if err != nil {
		cleanup()
		return tareImage{}, nil, err
	}
	return tareImage{layer: Tare.binaryLayer(prog), archive: archive}, cleanup, nil
}

// dynamicTareImage is the image of a tare built with cgo: the binary at /tare, its loader and libraries
// where the loader looks for them (elfdeps.go), named for all their paths, sizes, times and modes.
func dynamicTareImage(ctx context.Context, exe string) (tareImage, error) {
	files, err := sharedLibraries(exe)
	if err != nil {
		return tareImage{}, fmt.Errorf("finding the libraries of %s (built with cgo) for the tare image: %w", exe, err)
	}
	files[0].Path = Tare.Binary // sharedLibraries lists the program first
	layer, key, err := hostLayer(ctx, Tare, files)
	if err != nil {
		return tareImage{}, err
	}
	cache, err := CacheDir()
	if err != nil {
		return tareImage{}, err
	}
	return tareImage{layer: layer, archive: filepath.Join(cache, "images", "tare-"+key+".tar")}, nil
}

// isTare says whether the program at path is tare's main package.
func isTare(path string) bool {
	info, err := buildinfo.ReadFile(path)
	return err == nil && info.Path == tareMain
}

// tareImageCached says whether the tare image is already in the cache: the running tare's, or, when the
// running program is not tare (a test), any tare's, since building tare from unchanged source is itself
// served from Go's build cache and gives the same binary.
func tareImageCached() bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	var archive string
	switch {
	case staticTare(exe) == nil:
		if archive, err = tareArchivePath(exe); err != nil {
			return false
		}
	case isTare(exe):
		img, err := dynamicTareImage(context.Background(), exe)
		if err != nil {
			return false
		}
		archive = img.archive
	default:
		cache, err := CacheDir()
		if err != nil {
			return false
		}
		found, _ := filepath.Glob(filepath.Join(cache, "images", "tare-*.tar"))
		return len(found) > 0
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
	h.Write([]byte(Tare.Name + "\x00"))
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", bin, err)
	}
	return filepath.Join(cache, "images", "tare-"+hex.EncodeToString(h.Sum(nil)[:6])+".tar"), nil
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
		return "", nil, fmt.Errorf("building tare for its image in %s: %w\n%s", dir, err, output.LastLines(out, 10))
	}
	return path, cleanup, nil
}
