// Package liveversions tells, for the facts published in several versions
// side by side, which versions each consumer reads: as the schema
// directory builds it, and as its live processes announce it to the
// broker (runtime.ArgReads in their basic.consume arguments, which the
// management API lists). From both it says which published versions no
// consumer needs any more, so that the publisher can stop publishing them.
package liveversions

import (
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/runtime"
)

// Reads is one consumer's view of one fact with several versions.
type Reads struct {
	Consumer string   `json:"-"`
	Queues   []string `json:"-"` // the queues its processes attach to
	Fact     string   `json:"fact"`
	// Schema is what the consumer reads as the schema directory builds it
	// (its own version, and the older ones through upcasts).
	Schema    []int `json:"reads"`
	Published []int `json:"published"` // what the publisher publishes (warren.json "versions")
	// Live is what the processes attached to the consumer's queues
	// announce, one entry per distinct announcement; nil when the broker
	// was not asked (no management API), empty when none is attached.
	Live []Announced `json:"live,omitempty"`
	// Asked is set when Live was read from the broker.
	Asked bool `json:"asked"`
	// Unneeded are the published versions older than the newest that this
	// consumer can do without: each of its live processes (or, with none
	// attached or the broker not asked, the schema's build) reads another
	// published version.
	Unneeded []int `json:"unneeded"`
}

// Announced is one announcement and how many attached processes made it.
type Announced struct {
	Reads     []int `json:"reads"` // nil: the process does not announce what it reads
	Consumers int   `json:"consumers"`
}

// Attached is one process consuming from a queue, with its announcement
// (the value of runtime.ArgReads; "" when it made none).
type Attached struct {
	Queue, Announcement string
}

// Live fills in each row's Live and Unneeded from the processes attached
// to its queues. With the broker not asked, Unneeded follows the schema
// alone.
func Live(rows []Reads, attached []Attached, asked bool) []Reads {
	out := make([]Reads, len(rows))
	for i, r := range rows {
		r.Asked = asked
		r.Live = nil
		if asked {
			r.Live = []Announced{}
			for _, a := range attached {
				if !slices.Contains(r.Queues, a.Queue) {
					continue
				}
				r.Live = count(r.Live, readsOf(a.Announcement, r.Fact))
			}
		}
		r.Unneeded = unneeded(r)
		out[i] = r
	}
	return out
}

// readsOf returns the versions of fact an announcement reads; nil when it
// is missing or unreadable (an older build, or not warren).
func readsOf(announcement, fact string) []int {
	m, err := runtime.ParseReads(announcement)
	if err != nil || announcement == "" {
		return nil
	}
	if vs, ok := m[fact]; ok {
		return vs
	}
	return []int{}
}

func count(live []Announced, reads []int) []Announced {
	for i := range live {
		if (live[i].Reads == nil) == (reads == nil) && slices.Equal(live[i].Reads, reads) {
			live[i].Consumers++
			return live
		}
	}
	return append(live, Announced{Reads: reads, Consumers: 1})
}

// unneeded returns the published versions r's consumer can do without.
func unneeded(r Reads) []int {
	readers := [][]int{r.Schema}
	if len(r.Live) > 0 {
		readers = readers[:0]
		for _, a := range r.Live {
			if a.Reads == nil {
				return []int{} // a process that does not say may need any
			}
			readers = append(readers, a.Reads)
		}
	}
	out := []int{}
	for _, v := range r.Published {
		if v == slices.Max(r.Published) {
			continue // the version migrated to: retiring it is not this table's advice
		}
		ok := true
		for _, reads := range readers {
			ok = ok && slices.ContainsFunc(r.Published, func(p int) bool { return p != v && slices.Contains(reads, p) })
		}
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// Retirable returns, per fact, the published versions no consumer needs
// any more, ascending; a fact with none is absent.
func Retirable(rows []Reads) map[string][]int {
	needed := map[string]map[int]bool{}
	published := map[string][]int{}
	for _, r := range rows {
		published[r.Fact] = r.Published
		if needed[r.Fact] == nil {
			needed[r.Fact] = map[int]bool{}
		}
		for _, v := range r.Published {
			if !slices.Contains(r.Unneeded, v) {
				needed[r.Fact][v] = true
			}
		}
	}
	out := map[string][]int{}
	for f, vs := range published {
		for _, v := range vs {
			if !needed[f][v] {
				out[f] = append(out[f], v)
			}
		}
	}
	return out
}

// Describe renders a row's live announcements: "1-3 ×2, 1 ×1"; "-" with
// the broker not asked, "none attached" when no process is.
func Describe(r Reads) string {
	if !r.Asked {
		return "-"
	}
	if len(r.Live) == 0 {
		return "none attached"
	}
	parts := make([]string, len(r.Live))
	for i, a := range r.Live {
		s := "not announced"
		if a.Reads != nil {
			s = Range(a.Reads)
		}
		parts[i] = s + " ×" + strconv.Itoa(a.Consumers)
	}
	return strings.Join(parts, ", ")
}

// Range renders ascending versions: consecutive ones as "1-3", others as
// "1,3", none as "none".
func Range(vs []int) string {
	if len(vs) == 0 {
		return "none"
	}
	consecutive := true
	for i := 1; i < len(vs); i++ {
		consecutive = consecutive && vs[i] == vs[i-1]+1
	}
	if len(vs) == 1 || !consecutive {
		return Join(vs)
	}
	return strconv.Itoa(vs[0]) + "-" + strconv.Itoa(vs[len(vs)-1])
}

// Join renders versions comma-separated: "2,3"; none as "none".
func Join(vs []int) string {
	if len(vs) == 0 {
		return "none"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}
