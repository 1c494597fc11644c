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
	"slices"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/deploy"
)

//go:embed images/pause/main.go images/web/main.go images/crr/main.go
var imageSources embed.FS

// Image is an image the lab builds itself, so pods run with no registry: a tiny one of one static program
// built from Go code, or the datapath tools copied from the machine (toolsimage.go).
type Image struct {
	Name    string // reference kubelet and containerd use
	Source  string // what it is built from: a program under images/, "tare" for tare itself, or "datapath-tools"
	Binary  string // the one program, at this path inside the image and run as the entrypoint; "": none, pods name the program
	PathEnv string // PATH of the image's processes ("": unset), so that pods can name a program without its directory
}

// Images the lab provides: the sandbox (pause) image containerd is configured with, a small HTTP app,
// tare itself, which `tare agent manifest` runs by default, and Debian's static busybox (busyboximage.go).
var (
	PauseImage = Image{Name: "registry.k8s.io/pause:3.10", Source: "pause", Binary: "/pause"}
	WebImage   = Image{Name: "tare.lab/web:v1", Source: "web", Binary: "/web"}
	TareImage  = Image{Name: deploy.DefaultImage, Source: "tare", Binary: "/tare"}
	labImages  = []Image{PauseImage, WebImage, TareImage, BusyboxImage}
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
		switch img {
		case TareImage:
			if !tareImageCached() {
				return false
			}
			continue
		case BusyboxImage:
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

// ensureImages builds every lab image into the cache as an OCI archive (once per source version) and
// returns the archive paths.
func ensureImages(ctx context.Context) ([]string, error) {
	var out []string
	for _, img := range labImages {
		if img == TareImage || img == BusyboxImage {
			build := TareImageArchive
			if img == BusyboxImage {
				build = func(context.Context) (string, error) { return BusyboxImageArchive() }
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
		return nil, fmt.Errorf("building the %s image program: %w\n%s", name, err, tail(out, 10))
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// program is the contents of one file of an image: its size and a way to read it, once per pass over it.
type program struct {
	size int64
	open func() (io.ReadCloser, error)
}

func bytesProgram(b []byte) program {
	return program{size: int64(len(b)), open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}
}

// fileProgram is the file at path, read as it is when the archive is written.
func fileProgram(path string) (program, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return program{}, err
	}
	return program{size: fi.Size(), open: func() (io.ReadCloser, error) { return os.Open(path) }}, nil
}

// layerFile is one entry of an image's layer: a regular file with the contents of prog, or a directory.
type layerFile struct {
	path string // absolute, inside the image
	mode int64  // permission bits, with the sticky bit (0o1777 for /tmp)
	dir  bool
	prog program // a regular file's contents
}

// binaryLayer is the layer of an image of one program: the binary at img.Binary, executable.
func (img Image) binaryLayer(bin program) []layerFile {
	return []layerFile{{path: img.Binary, mode: 0o755, prog: bin}}
}

// writeArchiveFile writes img's OCI archive, holding files, to path, through a temporary file so that a
// crash leaves no partial archive behind for the cache to trust.
func writeArchiveFile(path string, img Image, files []layerFile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing the %s image: %w", img.Source, err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	w := bufio.NewWriterSize(f, 1<<20)
	err = writeOCIArchive(w, img, files, time.Unix(0, 0).UTC())
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
// of one layer holding files, with img.Binary (if any) as the entrypoint. The files are streamed twice
// (once to digest the layer, once to write it), never held in memory: tare's own binary is tens of
// megabytes, the datapath tools with their libraries more.
func writeOCIArchive(w io.Writer, img Image, files []layerFile, mtime time.Time) error {
	files, err := layerEntries(files)
	if err != nil {
		return err
	}
	digest := sha256.New()
	var size countingWriter
	if err := writeLayer(io.MultiWriter(digest, &size), files, mtime); err != nil {
		return err
	}
	layerDesc := ociDescriptor{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: "sha256:" + hex.EncodeToString(digest.Sum(nil)), Size: int(size)}
	runConfig := map[string]any{}
	if img.Binary != "" {
		runConfig["Entrypoint"] = []string{img.Binary}
	}
	if img.PathEnv != "" {
		runConfig["Env"] = []string{"PATH=" + img.PathEnv}
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux", "created": mtime.Format(time.RFC3339),
		"config": runConfig,
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
	if err := writeLayer(t, files, mtime); err != nil {
		return err
	}
	return t.Close()
}

// layerEntries orders files by path, each directory before what it holds, with the parent directories
// the files do not list added (0755), and refuses a path given twice or not absolute.
func layerEntries(files []layerFile) ([]layerFile, error) {
	byPath := map[string]layerFile{}
	for _, f := range files {
		if !filepath.IsAbs(f.path) || filepath.Clean(f.path) != f.path || f.path == "/" {
			return nil, fmt.Errorf("image file %q: not a clean absolute path", f.path)
		}
		if _, ok := byPath[f.path]; ok {
			return nil, fmt.Errorf("image file %s given twice", f.path)
		}
		byPath[f.path] = f
	}
	for _, f := range files {
		for d := filepath.Dir(f.path); d != "/"; d = filepath.Dir(d) {
			if p, ok := byPath[d]; ok && !p.dir {
				return nil, fmt.Errorf("image file %s lies under the file %s", f.path, d)
			} else if !ok {
				byPath[d] = layerFile{path: d, mode: 0o755, dir: true}
			}
		}
	}
	out := make([]layerFile, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, f)
	}
	// Sorted by path, a directory comes before everything under it: its path is their prefix.
	slices.SortFunc(out, func(a, b layerFile) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// writeLayer writes an image's one layer: a tar of the entries layerEntries ordered, owned by root.
func writeLayer(w io.Writer, files []layerFile, mtime time.Time) error {
	lt := tar.NewWriter(w)
	for _, f := range files {
		if err := writeLayerFile(lt, f, mtime); err != nil {
			return err
		}
	}
	return lt.Close()
}

func writeLayerFile(lt *tar.Writer, f layerFile, mtime time.Time) error {
	name := f.path[1:]
	if f.dir {
		return lt.WriteHeader(&tar.Header{Name: name + "/", Mode: f.mode, ModTime: mtime, Typeflag: tar.TypeDir})
	}
	r, err := f.prog.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := lt.WriteHeader(&tar.Header{Name: name, Mode: f.mode, Size: f.prog.size, ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(lt, r); err != nil {
		return fmt.Errorf("copying %s into the image: %w", f.path, err)
	}
	return nil
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
