package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// BusyboxImage is Debian's static busybox (package busybox-static) alone, at /bin/busybox, with no
// entrypoint: the smallest image whose container runs a process of its own, where the pause image runs
// only the sandbox. tare density --image busybox-sleep runs it as BusyboxSleep. The lab builds it from
// the machine's file, named for its size and time, so an upgrade of the package rebuilds it.
var BusyboxImage = Image{Name: "tare.lab/busybox:v1", Source: "busybox", PathEnv: "/bin"}

// BusyboxSleep is the command of a busybox-sleep container: sleep for 68 years (busybox's sleep takes
// seconds as a 32-bit number).
var BusyboxSleep = []string{"/bin/busybox", "sleep", "2147483647"}

// busyboxPath is where busybox-static installs busybox, on the machine and in the image.
const busyboxPath = "/bin/busybox"

// busyboxArchivePath is the cache path of the image built from the machine's busybox.
func busyboxArchivePath() (string, error) {
	fi, err := os.Stat(busyboxPath)
	if err != nil {
		return "", fmt.Errorf("the busybox image is built from %s (apt-get install busybox-static, or tare lab install): %w", busyboxPath, err)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%o", BusyboxImage.Name, fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
	return filepath.Join(cache, "images", BusyboxImage.Source+"-"+hex.EncodeToString(h.Sum(nil)[:6])+".tar"), nil
}

// BusyboxImageArchive returns the OCI archive of BusyboxImage, building it into the cache when missing.
func BusyboxImageArchive() (string, error) {
	archive, err := busyboxArchivePath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(archive); err == nil {
		return archive, nil
	}
	prog, err := fileProgram(busyboxPath)
	if err != nil {
		return "", err
	}
	if err := writeArchiveFile(archive, BusyboxImage, []layerFile{{path: busyboxPath, mode: 0o755, prog: prog}}); err != nil {
		return "", err
	}
	removeOtherArchives(archive, BusyboxImage.Source+"-")
	return archive, nil
}

func busyboxImageCached() bool {
	archive, err := busyboxArchivePath()
	if err != nil {
		return false
	}
	_, err = os.Stat(archive)
	return err == nil
}
