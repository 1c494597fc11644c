package images

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/testenv"
)

// TestTareArchive builds the tare image as `tare lab up` does from a test binary (tare built from
// this module's source), and checks it holds a static tare as its entrypoint, is cached by the binary's
// digest, and is what the manifest runs by default.
func TestTareArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tare")
	}
	cache := t.TempDir()
	t.Setenv("TARE_CACHE_DIR", cache)
	stale := filepath.Join(cache, "images", "tare-000000000000.tar")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("an older tare's image"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	if err := staticTare(exe); !errors.Is(err, errNotStatic) {
		t.Fatalf("the test binary is taken for tare: %v", err)
	}
	ctx := context.Background()
	archive, err := TareArchive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the older tare's image is still cached: %v", err)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img := readOCIArchive(t, f)
	if img.name != "tare.dev/tare:dev" || len(img.entrypoint) != 1 || img.entrypoint[0] != "/tare" {
		t.Errorf("image %q, entrypoint %v", img.name, img.entrypoint)
	}
	bin := filepath.Join(t.TempDir(), "tare")
	if err := os.WriteFile(bin, img.contents["/tare"], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := staticTare(bin); err != nil {
		t.Errorf("the image's /tare: %v", err)
	}
	if h := img.layer["/tare"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("/tare is not an executable file in the layer: %+v", h)
	}
	again, err := TareArchive(ctx)
	if err != nil || again != archive {
		t.Errorf("a second build gave %s (%v), want the cached %s", again, err, archive)
	}
	if !tareImageCached() {
		t.Error("a test's lab would build the tare image again, and say so, though one is cached")
	}
	if !imagesCachedFor(t, bin) {
		t.Error("the image of a static tare is not found in the cache by its digest")
	}
}

// imagesCachedFor says whether the archive of the tare binary at bin is in the cache.
func imagesCachedFor(t *testing.T, bin string) bool {
	t.Helper()
	p, err := tareArchivePath(bin)
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(p)
	return err == nil
}

// TestTareImageOfCgoTare: tare built with cgo (as `go install` or `go build` builds it where a C compiler
// exists), run from outside the source tree with no Go on its PATH, writes its own image, and that image
// runs it: the image's files alone, as a root directory, start /tare (chroot), so the loader and every
// library it needs are in it.
func TestTareImageOfCgoTare(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tare")
	}
	testenv.NeedRoot(t, "chroot needs root")
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.Unavailable(t, "no C compiler to build tare with cgo (make deps installs gcc)")
	}
	src, err := tareSourceDir(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tare")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/tare")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build with cgo: %v\n%s", err, out)
	}
	if !dynamic(t, bin) {
		t.Fatal("tare built with CGO_ENABLED=1 is static: this test needs a dynamically linked tare")
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	cmd := exec.CommandContext(t.Context(), bin, "agent", "image", "--out", archive)
	cmd.Dir = t.TempDir() // no tare source here
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "TARE_CACHE_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cgo-built tare agent image: %v\n%s", err, out)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img := readOCIArchive(t, f)
	self, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img.contents[Tare.Binary], self) {
		t.Fatal("the image's /tare is not the tare that wrote it")
	}
	root := t.TempDir()
	for _, name := range img.order {
		h := img.layer[name]
		p := filepath.Join(root, name)
		if h.FileInfo().IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, img.contents[name], os.FileMode(h.Mode).Perm()); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.CommandContext(t.Context(), "chroot", root, Tare.Binary, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tare") {
		t.Fatalf("the image's tare does not run on the image's files alone: %v\n%s\nimage files: %v", err, out, img.order)
	}
	t.Logf("image of the cgo-built tare: %d files; /tare --version in it: %s", len(img.order), strings.TrimSpace(string(out)))
}

// dynamic says whether the program at path asks for a dynamic loader.
func dynamic(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}
