package lab

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tare-dev/tare/internal/deploy"
)

//go:embed images/pause/main.go images/web/main.go
var imageSources embed.FS

// Image is a tiny image the lab builds from Go code, so pods run with no registry.
type Image struct {
	Name   string // reference kubelet and containerd use
	Source string // program under images/, or "tare" for tare itself
	Binary string // path inside the image
}

// Images the lab provides: the sandbox (pause) image containerd is configured with, a small HTTP app, and
// tare itself, which `tare agent manifest` runs by default.
var (
	PauseImage = Image{Name: "registry.k8s.io/pause:3.10", Source: "pause", Binary: "/pause"}
	WebImage   = Image{Name: "tare.lab/web:v1", Source: "web", Binary: "/web"}
	TareImage  = Image{Name: deploy.DefaultImage, Source: "tare", Binary: "/tare"}
	labImages  = []Image{PauseImage, WebImage, TareImage}
)

// imageArchive is where an image's OCI archive is cached: named for its source, so a change rebuilds it.
func imageArchive(img Image) (path string, src []byte, err error) {
	cache, err := CacheDir()
	if err != nil {
		return "", nil, err
	}
	if src, err = imageSources.ReadFile("images/" + img.Source + "/main.go"); err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(append(append([]byte(img.Name), 0), src...))
	return filepath.Join(cache, "images", img.Source+"-"+hex.EncodeToString(sum[:6])+".tar"), src, nil
}

// imagesCached says whether every lab image is already built.
func imagesCached() bool {
	for _, img := range labImages {
		if img == TareImage {
			if !tareImageCached() {
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

// ensureImages builds every lab image into the cache as an OCI archive (once per source version) and
// returns the archive paths.
func ensureImages(ctx context.Context) ([]string, error) {
	var out []string
	for _, img := range labImages {
		if img == TareImage {
			archive, err := TareImageArchive(ctx)
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
		if err := writeArchiveFile(archive, img, bytesProgram(bin)); err != nil {
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
		return nil, fmt.Errorf("building the %s image program: %w\n%s", name, err, tail(out, 10))
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// program is an image's one binary: its size and a way to read it, once per pass over it.
type program struct {
	size int64
	open func() (io.ReadCloser, error)
}

func bytesProgram(b []byte) program {
	return program{size: int64(len(b)), open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}
}

// fileProgram is the binary at path, read as it is when the archive is written.
func fileProgram(path string) (program, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return program{}, err
	}
	return program{size: fi.Size(), open: func() (io.ReadCloser, error) { return os.Open(path) }}, nil
}

// writeArchiveFile writes img's OCI archive to path, through a temporary file so that a crash leaves no
// partial archive behind for the cache to trust.
func writeArchiveFile(path string, img Image, bin program) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing the %s image: %w", img.Source, err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	w := bufio.NewWriterSize(f, 1<<20)
	err = writeOCIArchive(w, img, bin, time.Unix(0, 0).UTC())
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the %s image: %w", img.Source, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// writeOCIArchive writes an OCI image layout (as a tar, what `ctr images import` reads) holding one image
// of one layer: the static binary at img.Binary, run as the entrypoint. The binary is streamed twice (once
// to digest the layer, once to write it), never held in memory: tare's own binary is tens of megabytes.
func writeOCIArchive(w io.Writer, img Image, bin program, mtime time.Time) error {
	digest := sha256.New()
	var size countingWriter
	if err := writeLayer(io.MultiWriter(digest, &size), img, bin, mtime); err != nil {
		return err
	}
	layerDesc := ociDescriptor{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: "sha256:" + hex.EncodeToString(digest.Sum(nil)), Size: int(size)}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux", "created": mtime.Format(time.RFC3339),
		"config": map[string]any{"Entrypoint": []string{img.Binary}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	})
	if err != nil {
		return err
	}
	configDesc := descriptor("application/vnd.oci.image.config.v1+json", config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": configDesc, "layers": []ociDescriptor{layerDesc},
	})
	if err != nil {
		return err
	}
	manifestDesc := descriptor("application/vnd.oci.image.manifest.v1+json", manifest)
	manifestDesc.Platform = &ociPlatform{Architecture: runtime.GOARCH, OS: "linux"}
	manifestDesc.Annotations = map[string]string{"io.containerd.image.name": img.Name, "org.opencontainers.image.ref.name": img.Name}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []ociDescriptor{manifestDesc}})
	if err != nil {
		return err
	}
	t := tar.NewWriter(w)
	small := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blobPath(configDesc), config},
		{blobPath(manifestDesc), manifest},
	}
	for _, f := range small {
		if err := t.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := t.Write(f.data); err != nil {
			return err
		}
	}
	// The layer again, byte for byte: the tar writer refuses it if its length differs from the first pass.
	if err := t.WriteHeader(&tar.Header{Name: blobPath(layerDesc), Mode: 0o644, Size: int64(size), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if err := writeLayer(t, img, bin, mtime); err != nil {
		return err
	}
	return t.Close()
}

// writeLayer writes the image's one layer: a tar holding the binary at img.Binary, executable.
func writeLayer(w io.Writer, img Image, bin program, mtime time.Time) error {
	r, err := bin.open()
	if err != nil {
		return err
	}
	defer r.Close()
	lt := tar.NewWriter(w)
	if err := lt.WriteHeader(&tar.Header{Name: img.Binary[1:], Mode: 0o755, Size: bin.size, ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(lt, r); err != nil {
		return fmt.Errorf("reading %s for the %s image: %w", img.Binary[1:], img.Source, err)
	}
	return lt.Close()
}

// countingWriter counts the bytes written to it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

type ociPlatform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Platform    *ociPlatform      `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func descriptor(mediaType string, b []byte) ociDescriptor {
	sum := sha256.Sum256(b)
	return ociDescriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: len(b)}
}

func blobPath(d ociDescriptor) string { return "blobs/sha256/" + d.Digest[len("sha256:"):] }

// importImages loads the archives into containerd's k8s.io namespace (where the CRI plugin looks).
func importImages(ctx context.Context, ctr, address string, archives []string) error {
	for _, a := range archives {
		cmd := exec.CommandContext(ctx, ctr, "--address", address, "-n", "k8s.io", "images", "import", a)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("importing %s into containerd: %w\n%s", filepath.Base(a), err, tail(out, 10))
		}
	}
	return nil
}
