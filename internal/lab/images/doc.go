// Package images builds the container images and programs tare runs on a cluster without a registry, each
// written into the cache (CacheDir) as an OCI archive of one layer, what `ctr images import` reads: the
// lab's own images (Lab: Pause and Web, built from the Go programs under pause/ and web/; Tare, the running
// tare binary; Busybox, the machine's static busybox), and the images copied from the machine's programs
// with every shared library they load, built only on demand (Tools, the datapath tools with tare-crr;
// Exporters, Debian's Prometheus exporters). It also builds tare-crr, tcp-crr's program (crr/), for the
// host path of tare datapath (CRRProgram).
//
// Where things are: images.go (Image, the lab's images, Ensure and Cached, building an embedded program),
// oci.go (the OCI archive of one layer of files every image is written as, and ManifestDigest, which reads
// it back), cache.go (CacheDir, and removing the archives an image's newer build replaces), elfdeps.go (the
// shared libraries of a program, found as the dynamic loader finds them), tare.go (tare's own image),
// tools.go (Tools and ToolsArchive, the datapath tools and their host layer), busybox.go, exporters.go and
// crr.go.
//
// It builds and writes files only: it talks to no running lab or containerd. Package lab imports it to
// build its images at tare lab install and import them into its nodes (at up, or on demand with
// ImportToolsImage and ImportHostImages); tare agent image, tare datapath and tare density (internal/cli)
// and the experiments' guard (internal/experiment) name its images and archives. It imports deploy (the
// tare image's default name), output (the last lines of a failed build) and userfile (writing an archive
// whole).
//
// Imports: deploy, output, userfile
package images
