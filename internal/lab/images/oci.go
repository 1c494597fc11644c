package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/userfile"
)

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
	err := userfile.WriteMode(path, 0o644, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		if err := writeOCIArchive(w, img, files, time.Unix(0, 0).UTC()); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("writing the %s image: %w", img.Source, err)
	}
	return nil
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

// ManifestDigest reads the digest of the one image manifest of an OCI archive of this package from its
// index.json, which writeOCIArchive writes near the start: containerd names the image it imports for that
// manifest.
func ManifestDigest(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s has no index.json", archive)
		}
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", archive, err)
		}
		if h.Name != "index.json" {
			continue
		}
		var index struct{ Manifests []ociDescriptor }
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			return "", fmt.Errorf("%s: reading index.json: %w", archive, err)
		}
		if len(index.Manifests) != 1 {
			return "", fmt.Errorf("%s: index.json names %d manifests, not one", archive, len(index.Manifests))
		}
		return index.Manifests[0].Digest, nil
	}
}
