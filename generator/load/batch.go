package load

import (
	"encoding/json"
	"strconv"
	"time"
)

// BatchSettings are a batch consumer's manifest key "batch": its handler
// takes up to Size facts at once, waiting at most Wait after the first.
type BatchSettings struct {
	Size int           // "size"; 0 when absent
	Wait time.Duration // "wait"; 0 when absent or not a duration
	// Pointer is where "batch" is, "" when the consumer has none.
	Pointer string
	// Unreadable is set when a value was reported already (a wait that is
	// no duration), so that nothing more is said of the batch.
	Unreadable bool
}

// Batched reports whether the consumer declares a batch.
func (s BatchSettings) Batched() bool { return s.Pointer != "" }

// readBatchSettings reads "batch" of the consumer at pointer. The
// meta-schema guarantees its shape; the size's range and the wait's sign
// are checked by topology.Build, which knows the prefetch.
func readBatchSettings(doc *Document, pointer string, obj map[string]any, errs *ErrorList) BatchSettings {
	b, ok := obj["batch"].(map[string]any)
	if !ok {
		return BatchSettings{}
	}
	s := BatchSettings{Pointer: Append(pointer, "batch")}
	if n, ok := b["size"].(json.Number); ok {
		size, err := strconv.Atoi(n.String())
		if err != nil {
			errs.Add(doc.Errorf(Append(s.Pointer, "size"), "expected an integer of at least 1, got %s", n))
			s.Unreadable = true
		}
		s.Size = size
	}
	if w, ok := b["wait"].(string); ok {
		d, err := time.ParseDuration(w)
		if err != nil {
			errs.Add(doc.Errorf(Append(s.Pointer, "wait"), "%s", badDuration(w, "200ms", 1)))
			s.Unreadable = true
		}
		s.Wait = d
	}
	return s
}
