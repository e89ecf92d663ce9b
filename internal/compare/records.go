package compare

import (
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// RecordsSamples reads per-request values from the records files under dir (a benchmark's
// records_directory). A trial without a records file, or whose file is missing, unreadable or
// not the one the document names (its SHA-256 differs), has no samples: the comparison then
// falls back on the spread of repeated trials rather than trusting a file of another run. A
// records_file outside dir is never read (records.Path); records.CheckFiles says which one
// is refused, for a caller that reports it.
func RecordsSamples(dir string) Samples {
	return func(_ string, t results.Trial, metric string) ([]float64, bool) {
		if t.RecordsFile == "" {
			return nil, false
		}
		p, err := records.Path(dir, t.RecordsFile)
		if err != nil {
			return nil, false
		}
		lines, sum, err := records.Read(p)
		if err != nil || (t.RecordsSHA256 != "" && sum != t.RecordsSHA256) {
			return nil, false
		}
		var vs []float64
		for _, l := range lines {
			r := l.RequestResult()
			if r.Warmup || !metrics.Succeeded(r) {
				continue
			}
			if v, ok := metrics.RequestValue(metric, r); ok {
				vs = append(vs, v)
			}
		}
		return vs, len(vs) > 0
	}
}
