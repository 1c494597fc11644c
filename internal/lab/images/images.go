package images

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/output"
)

//go:embed pause/main.go web/main.go crr/main.go
var imageSources embed.FS

// ErrPrerequisite marks something missing from the machine that tare cannot install itself: Go to build a
// program with, a tool or exporter an image is made of. lab.ErrPrerequisite is the same error.
var ErrPrerequisite = errors.New("missing prerequisite")

// Image is an image the lab builds itself, so pods run with no registry: a tiny one of one static program
// built from Go code, or the datapath tools copied from the machine (tools.go).
type Image struct {
	Name    string // reference kubelet and containerd use
	Source  string // what it is built from: a program under this directory, "tare" for tare itself, or "datapath-tools"
	Binary  string // the one program, at this path inside the image and run as the entrypoint; "": none, pods name the program
	PathEnv string // PATH of the image's processes ("": unset), so that pods can name a program without its directory
}

// Images the lab provides: the sandbox (pause) image containerd is configured with, a small HTTP app,
// tare itself, which `tare agent manifest` runs by default, and Debian's static busybox (busybox.go).
var (
	Pause = Image{Name: "registry.k8s.io/pause:3.10", Source: "pause", Binary: "/pause"}
	Web   = Image{Name: "tare.lab/web:v1", Source: "web", Binary: "/web"}
	Tare  = Image{Name: deploy.DefaultImage, Source: "tare", Binary: "/tare"}
)

// Lab are the images every lab holds, in the order Ensure returns their archives: built by tare lab
// install and imported into every node's containerd at up. Tools and Exporters are built only on demand.
var Lab = []Image{Pause, Web, Tare, Busybox}

// imageArchive is where an image's OCI archive is cached: named for its source, so a change rebuilds it.
func imageArchive(img Image) (path string, src []byte, err error) {
	cache, err := CacheDir()
	if err != nil {
		return "", nil, err
	}
	if src, err = imageSources.ReadFile(img.Source + "/main.go"); err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(append(append([]byte(img.Name), 0), src...))
	return filepath.Join(cache, "images", img.Source+"-"+hex.EncodeToString(sum[:6])+".tar"), src, nil
}

// Cached says whether every lab image is already built.
func Cached() bool {
	for _, img := range Lab {
		switch img {
		case Tare:
			if !tareImageCached() {
				return false
			}
			continue
		case Busybox:
			if !busyboxImageCached() {
				return false
			}
			continue
		}
		p, _, err := imageArchive(img)
		if err != nil {
			return false
		}
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// Ensure builds every lab image into the cache as an OCI archive (once per source version) and
// returns the archive paths, one for each image of Lab, in its order.
func Ensure(ctx context.Context) ([]string, error) {
	var out []string
	for _, img := range Lab {
		if img == Tare || img == Busybox {
			build := TareArchive
			if img == Busybox {
				build = func(context.Context) (string, error) { return BusyboxArchive() }
			}
			archive, err := build(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, archive)
			continue
		}
		archive, src, err := imageArchive(img)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(archive); err == nil {
			out = append(out, archive)
			continue
		}
		bin, err := buildStatic(ctx, img.Source, src)
		if err != nil {
			return nil, err
		}
		if err := writeArchiveFile(archive, img, img.binaryLayer(bytesProgram(bin))); err != nil {
			return nil, err
		}
		out = append(out, archive)
	}
	return out, nil
}

// buildStatic compiles one embedded program into a static binary and returns its bytes.
func buildStatic(ctx context.Context, name string, src []byte) ([]byte, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("building the %s image needs Go on PATH (https://go.dev/dl): %w", name, ErrPrerequisite)
	}
	dir, err := os.MkdirTemp("", "tare-image-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+name+"\n\ngo 1.22\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-ldflags=-s -w", "-o", name, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the %s image program: %w\n%s", name, err, output.LastLines(out, 10))
	}
	return os.ReadFile(filepath.Join(dir, name))
}
