package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Tools holds the machine's network and disk test tools, as Debian installed them, for the pods of
// tare datapath: iperf3, sockperf and fio under /usr/bin with every shared library they load (under the
// paths the loader looks in), the loader itself and an empty /tmp; and tare's own static tare-crr
// (CRRProgram). It has no shell and no entrypoint: a pod
// names the tool (its PATH is /usr/bin). It is big (the libraries of fio's engines): the lab builds it only
// when asked (ToolsArchive, tare lab install --datapath) and imports it into a lab's nodes only when
// asked (lab.Lab.ImportToolsImage), never at every up.
var Tools = Image{Name: "tare.lab/datapath-tools:v1", Source: "datapath-tools", PathEnv: "/usr/bin"}

// DatapathTool is a program of the tools image and the Debian package that ships it.
type DatapathTool struct {
	Name, Package string
	Required      bool // false: the image is built without it when it is not installed
}

// DatapathTools are the tools of Tools: fio may be left out, iperf3 and sockperf may not.
var DatapathTools = []DatapathTool{{"iperf3", "iperf3", true}, {"sockperf", "sockperf", true}, {"fio", "fio", false}}

// Path is where the tool is on the machine and in the image.
func (t DatapathTool) Path() string { return "/usr/bin/" + t.Name }

// Installed says whether the tool is on the machine, as a regular file at Path.
func (t DatapathTool) Installed() bool {
	fi, err := os.Stat(t.Path())
	return err == nil && fi.Mode().IsRegular()
}

// installToolsHint is what to run when a tool is missing.
const installToolsHint = "apt-get install iperf3 sockperf fio (or tare lab install --datapath)"

// CheckTools says which required tools (iperf3, sockperf) are not installed, and how to install them, in
// an error matching ErrPrerequisite; nil when they are all there.
func CheckTools() error {
	var missing []string
	for _, t := range DatapathTools {
		if t.Required && !t.Installed() {
			missing = append(missing, t.Path())
		}
	}
	if len(missing) > 0 {
		return missingToolsError(missing)
	}
	return nil
}

// ToolsBuild is the tools image as built from this machine.
type ToolsBuild struct {
	Path  string   // the OCI archive, in the cache
	Tools []string // the tools it holds, by name (under /usr/bin): iperf3, sockperf, fio when installed, tare-crr
	Files int      // files in its layer: the tools, their libraries and the loader
	Size  int64    // bytes of the archive
	Built bool     // built by this call, not found in the cache
}

// ToolsArchive returns the OCI archive of Tools, building it into the cache when missing. The
// archive is named for the tools and libraries it holds (path, size, modification time, mode), so an
// upgrade of a package rebuilds it, and replaces the archive of older files. A missing iperf3 or sockperf
// is an error matching ErrPrerequisite; fio is left out when it is not installed (see ToolsBuild.Tools).
func ToolsArchive(ctx context.Context) (ToolsBuild, error) {
	tools, files, err := toolsFiles()
	if err != nil {
		return ToolsBuild{}, err
	}
	crr, err := CRRProgram(ctx)
	if err != nil {
		return ToolsBuild{}, err
	}
	tools, files = append(tools, CRRName), append(files, loadedFile{Path: "/usr/bin/" + CRRName, Host: crr})
	layer, key, err := hostLayer(ctx, Tools, files)
	if err != nil {
		return ToolsBuild{}, err
	}
	cache, err := CacheDir()
	if err != nil {
		return ToolsBuild{}, err
	}
	a := ToolsBuild{Path: filepath.Join(cache, "images", Tools.Source+"-"+key+".tar"), Tools: tools, Files: len(files)}
	if _, err := os.Stat(a.Path); err != nil {
		if err := writeArchiveFile(a.Path, Tools, layer); err != nil {
			return ToolsBuild{}, err
		}
		a.Built = true
		removeOtherArchives(a.Path, Tools.Source+"-")
	}
	fi, err := os.Stat(a.Path)
	if err != nil {
		return ToolsBuild{}, err
	}
	a.Size = fi.Size()
	return a, nil
}

// toolsFiles lists the installed tools and the files the image holds for them: the tools, their
// libraries and their loader.
func toolsFiles() (tools []string, files []loadedFile, err error) {
	if err := CheckTools(); err != nil {
		return nil, nil, err
	}
	var progs []string
	for _, t := range DatapathTools {
		if t.Installed() {
			tools, progs = append(tools, t.Name), append(progs, t.Path())
		}
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
