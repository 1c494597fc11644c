package images

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// Busybox is Debian's static busybox (package busybox-static) alone, at /bin/busybox, with no
// entrypoint: the smallest image whose container runs a process of its own, where the pause image runs
// only the sandbox. tare density --image busybox-sleep runs it as BusyboxSleep. The lab builds it from
// the machine's file, named for its size and time, so an upgrade of the package rebuilds it.
var Busybox = Image{Name: "tare.lab/busybox:v1", Source: "busybox", PathEnv: "/bin"}

// BusyboxSleep is the command of a busybox-sleep container: sleep for 68 years.
var BusyboxSleep = []string{"/bin/busybox", "sleep", "2147483647"}

// BusyboxPath is where busybox-static installs busybox, on the machine and in the image.
const BusyboxPath = "/bin/busybox"

// busyboxArchivePath is the cache path of the image built from the machine's busybox.
func busyboxArchivePath() (string, error) {
	fi, err := os.Stat(BusyboxPath)
	if err != nil {
		return "", fmt.Errorf("the busybox image is built from %s (apt-get install busybox-static, or tare lab install): %w", BusyboxPath, err)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%o", Busybox.Name, fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
	return filepath.Join(cache, "images", Busybox.Source+"-"+hex.EncodeToString(h.Sum(nil)[:6])+".tar"), nil
}

// BusyboxArchive returns the OCI archive of Busybox, building it into the cache when missing.
func BusyboxArchive() (string, error) {
	archive, err := busyboxArchivePath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(archive); err == nil {
		return archive, nil
	}
	if err := staticBusybox(); err != nil {
		return "", err
	}
	prog, err := fileProgram(BusyboxPath)
	if err != nil {
		return "", err
	}
	if err := writeArchiveFile(archive, Busybox, []layerFile{{path: BusyboxPath, mode: 0o755, prog: prog}}); err != nil {
		return "", err
	}
	removeOtherArchives(archive, Busybox.Source+"-")
	return archive, nil
}

// staticBusybox says why the machine's busybox cannot be the image's, nil when it can: the image holds
// no loader, so the binary must be static (Debian's busybox-static; its busybox package is dynamic).
func staticBusybox() error {
	f, err := elf.Open(BusyboxPath)
	if err != nil {
		return fmt.Errorf("reading %s: %w", BusyboxPath, err)
	}
	defer func() { _ = f.Close() }()
	interp, err := interpreter(f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", BusyboxPath, err)
	}
	if interp != "" {
		return fmt.Errorf("%s is dynamically linked (loader %s): the busybox image needs the static one: apt-get install busybox-static: %w", BusyboxPath, interp, ErrPrerequisite)
	}
	return nil
}

// busyboxImageCached says whether the image of the machine's busybox is in the cache.
func busyboxImageCached() bool {
	archive, err := busyboxArchivePath()
	if err != nil {
		return false
	}
	_, err = os.Stat(archive)
	return err == nil
}
