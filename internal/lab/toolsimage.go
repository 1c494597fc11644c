package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ToolsImage holds the machine's network and disk test tools, as Debian installed them, for the pods of
// tare datapath: iperf3, sockperf and fio under /usr/bin with every shared library they load (under the
// paths the loader looks in), the loader itself and an empty /tmp; and tare's own static tare-crr
// (CRRProgram). It has no shell and no entrypoint: a pod
// names the tool (its PATH is /usr/bin). It is big (the libraries of fio's engines): the lab builds it only
// when asked (ToolsImageArchive, tare lab install --datapath) and imports it into a lab's nodes only when
// asked (ImportToolsImage), never at every up.
var ToolsImage = Image{Name: "tare.lab/datapath-tools:v1", Source: "datapath-tools", PathEnv: "/usr/bin"}

// datapathTool is a program of the tools image and the Debian package that ships it.
type datapathTool struct {
	name, pkg string
	required  bool // false: the image is built without it when it is not installed
}

// datapathTools are the tools of ToolsImage: fio may be left out, iperf3 and sockperf may not.
var datapathTools = []datapathTool{{"iperf3", "iperf3", true}, {"sockperf", "sockperf", true}, {"fio", "fio", false}}

// path is where the tool is on the machine and in the image.
func (t datapathTool) path() string { return "/usr/bin/" + t.name }

func (t datapathTool) installed() bool {
	fi, err := os.Stat(t.path())
	return err == nil && fi.Mode().IsRegular()
}

// installToolsHint is what to run when a tool is missing.
const installToolsHint = "apt-get install iperf3 sockperf fio (or tare lab install --datapath)"

// ToolsArchive is the tools image as built from this machine.
type ToolsArchive struct {
	Path  string   // the OCI archive, in the cache
	Tools []string // the tools it holds, by name (under /usr/bin): iperf3, sockperf, fio when installed, tare-crr
	Files int      // files in its layer: the tools, their libraries and the loader
	Size  int64    // bytes of the archive
	Built bool     // built by this call, not found in the cache
}

// ToolsImageArchive returns the OCI archive of ToolsImage, building it into the cache when missing. The
// archive is named for the tools and libraries it holds (path, size, modification time, mode), so an
// upgrade of a package rebuilds it, and replaces the archive of older files. A missing iperf3 or sockperf
// is an error matching ErrPrerequisite; fio is left out when it is not installed (see Tools).
func ToolsImageArchive(ctx context.Context) (ToolsArchive, error) {
	tools, files, err := toolsFiles()
	if err != nil {
		return ToolsArchive{}, err
	}
	crr, err := CRRProgram(ctx)
	if err != nil {
		return ToolsArchive{}, err
	}
	tools, files = append(tools, CRRName), append(files, loadedFile{Path: "/usr/bin/" + CRRName, Host: crr})
	layer, key, err := hostLayer(ctx, ToolsImage, files)
	if err != nil {
		return ToolsArchive{}, err
	}
	cache, err := CacheDir()
	if err != nil {
		return ToolsArchive{}, err
	}
	a := ToolsArchive{Path: filepath.Join(cache, "images", ToolsImage.Source+"-"+key+".tar"), Tools: tools, Files: len(files)}
	if _, err := os.Stat(a.Path); err != nil {
		if err := writeArchiveFile(a.Path, ToolsImage, layer); err != nil {
			return ToolsArchive{}, err
		}
		a.Built = true
		removeOtherArchives(a.Path, ToolsImage.Source+"-")
	}
	fi, err := os.Stat(a.Path)
	if err != nil {
		return ToolsArchive{}, err
	}
	a.Size = fi.Size()
	return a, nil
}

// toolsFiles lists the installed tools and the files the image holds for them: the tools, their
// libraries and their loader.
func toolsFiles() (tools []string, files []loadedFile, err error) {
	var progs, missing []string
	for _, t := range datapathTools {
		switch {
		case t.installed():
			tools, progs = append(tools, t.name), append(progs, t.path())
		case t.required:
			missing = append(missing, t.path())
		}
	}
	if len(missing) > 0 {
		return nil, nil, missingToolsError(missing)
	}
	files, err = sharedLibraries(progs...)
	if err != nil {
		return nil, nil, fmt.Errorf("finding the libraries of %s: %w", strings.Join(tools, ", "), err)
	}
	return tools, files, nil
}

// missingToolsError says which required tools (paths) are not installed, and how to install them.
func missingToolsError(missing []string) error {
	return fmt.Errorf("the datapath tools image needs %s, not installed: %s: %w",
		strings.Join(missing, " and "), installToolsHint, ErrPrerequisite)
}

// hostLayer is img's layer of files from the machine (each with its mode there) and an empty /tmp, with the
// key naming its archive: a digest of the image's name and of every file's paths, size, modification time
// and mode.
func hostLayer(ctx context.Context, img Image, files []loadedFile) (layer []layerFile, key string, err error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", img.Name)
	for _, f := range files {
		fi, err := os.Stat(f.Host)
		if err != nil {
			return nil, "", err
		}
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%o\x00", f.Path, f.Host, fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
		host := f.Host
		layer = append(layer, layerFile{path: f.Path, mode: int64(fi.Mode().Perm()), prog: program{size: fi.Size(),
			open: func() (io.ReadCloser, error) { return openWithContext(ctx, host) }}})
	}
	layer = append(layer, layerFile{path: "/tmp", mode: 0o1777, dir: true})
	return layer, hex.EncodeToString(h.Sum(nil)[:6]), nil
}

// openWithContext opens a file whose reads fail once ctx is done, so that writing a big image stops with it.
func openWithContext(ctx context.Context, path string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return ctxReader{ctx, f}, nil
}

type ctxReader struct {
	ctx context.Context
	*os.File
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.File.Read(p)
}

// InstallDatapathTools installs the Debian packages of the datapath tools (iperf3, sockperf, fio) with apt
// when missing (which needs root) and builds ToolsImage's archive. It returns the tools and the image as
// Components, and is a no-op when everything is there.
func InstallDatapathTools(ctx context.Context) ([]Component, error) {
	start := time.Now()
	var missing []string
	for _, t := range datapathTools {
		if !t.installed() {
			missing = append(missing, t.pkg)
		}
	}
	if err := installPackages(ctx, missing); err != nil {
		return nil, err
	}
	var out []Component
	for _, t := range datapathTools {
		if !t.installed() {
			return out, fmt.Errorf("%s still missing after installing %s", t.path(), t.pkg)
		}
		src := "present"
		if slices.Contains(missing, t.pkg) {
			src = "apt"
		}
		out = append(out, Component{Name: t.name, Path: t.path(), Source: src, Version: "debian " + t.pkg, Took: time.Since(start)})
	}
	a, err := ToolsImageArchive(ctx)
	if err != nil {
		return out, err
	}
	src := "cached"
	if a.Built {
		src = "built"
	}
	return append(out, Component{Name: "image " + ToolsImage.Name, Path: a.Path, Source: src, Version: ToolsImage.Source, Took: time.Since(start)}), nil
}
