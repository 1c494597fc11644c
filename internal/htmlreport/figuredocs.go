package htmlreport

// DocsBase is where the definitions of tare's figures are published (docs/figures.md in the repository):
// every report links a figure's heading and headline card there, so a reader goes from a figure to its
// definition in one click. It is the one place that names the address.
const DocsBase = "https://github.com/tare-dev/tare/blob/main/docs/figures.md"

// sectionFigures maps a section's ID to the anchor in docs/figures.md that defines what it shows.
var sectionFigures = map[string]string{
	"busy":          "node-busy",
	"components":    "group-cpu",
	"cluster":       "cluster-and-agent",
	"short-lived":   "childrens-cpu",
	"block-io":      "block-io",
	"findings":      "explain",
	"use":           "explain",
	"results":       "statistics",
	"distributions": "median-and-interval",
	"sequential":    "mde",
	"sweep":         "statistics",
	"trials":        "experiment-metrics",
	"ratios":        "ratio-to-host",
	"figures":       "data-path",
	"cpu":           "marginal-cost",
	"memory":        "marginal-cost",
	"model":         "marginal-cost",
	"outside":       "runtimeclass-overhead",
	"kube-reserved": "kube-reserved",
	"churn":         "marginal-cost",
	"steps":         "marginal-cost",
}

// cardFigures maps a headline card's label to its definition's anchor.
var cardFigures = map[string]string{
	"node busy":         "node-busy",
	"node":              "node-busy",
	"Cluster busy":      "node-busy",
	"groups":            "group-cpu",
	"unattributed":      "unattributed",
	"tare itself":       "tares-own-cost",
	"tare's own cost":   "tares-own-cost",
	"Control plane":     "cluster-and-agent",
	"Kubelet+runtime":   "cluster-and-agent",
	"Per pod":           "marginal-cost",
	"node busy per pod": "marginal-cost",
	"charged per pod":   "runtimeclass-overhead",
	"differences":       "statistics",
}

// figureDoc is the address of the definition behind a section ID or card label, or "" when none.
func figureDoc(anchors map[string]string, key string) string {
	if a, ok := anchors[key]; ok {
		return DocsBase + "#" + a
	}
	return ""
}

func sectionDoc(id string) string { return figureDoc(sectionFigures, id) }
func cardDoc(label string) string { return figureDoc(cardFigures, label) }
