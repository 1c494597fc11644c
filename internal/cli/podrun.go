package cli

import (
	"time"

	"github.com/tare-dev/tare/internal/lab/images"
)

// Options shared by the verbs that run pods of their own (density, datapath).

// podImage resolves a run's --image and --pull: alias names the lab's own image, which is never pulled;
// any other image is pulled if missing, unless --pull never.
func podImage(image, alias string, labImage images.Image, pull string) (name string, pullNever bool, err error) {
	if image == alias {
		image, pullNever = labImage.Name, true
	}
	switch pull {
	case "":
	case "never":
		pullNever = true
	case "if-not-present":
		pullNever = false
	default:
		return "", false, usageError("--pull %q: want never or if-not-present", pull)
	}
	return image, pullNever, nil
}

// runSeed is a run's --seed, or one from the clock when it is 0.
func runSeed(seed uint64) uint64 {
	if seed == 0 {
		return uint64(time.Now().UnixNano())
	}
	return seed
}
