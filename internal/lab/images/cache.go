package images

import (
	"fmt"
	"os"
	"path/filepath"
)

// CacheDir is where built components live: $TARE_CACHE_DIR, else the user cache dir + /tare. The images'
// archives are under its images/, tare-crr under its bin/; the lab keeps the programs it builds and
// downloads there too.
func CacheDir() (string, error) {
	if d := os.Getenv("TARE_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding a cache directory (set TARE_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "tare"), nil
}

// removeOtherArchives deletes the cached files named prefix* with keep's extension other than keep: the
// images of other tare binaries (tens of megabytes each), of other versions of the datapath tools, or
// builds of other tare-crr sources.
func removeOtherArchives(keep, prefix string) {
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(keep), prefix+"*"+filepath.Ext(keep)))
	for _, p := range old {
		if p != keep {
			_ = os.Remove(p)
		}
	}
}
