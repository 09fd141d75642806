package console

import (
	"bytes"
	"fmt"
	"html"
	"strings"

	"github.com/warrenbus/warren/runtime/topology"
)

// drawTopology draws the topology as SVG, one lane per consumer: the
// events exchange and the bindings into the work queue, the consumer,
// the retry tiers behind the retry exchange, and the poison queue behind
// the dead exchange. It uses presentation attributes only (no <style>),
// so the console's content security policy applies to it unchanged, and
// every name is escaped.
func drawTopology(top topology.Topology) []byte {
	const laneH, width = 170, 1120
	var b bytes.Buffer
	lanes := max(len(top.Consumers), 1)
	if top.Delay.Enabled() {
		lanes++
	}
	height := 40 + laneH*lanes
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="13">`, width, height, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="#555"/></marker></defs>`)
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/>`)
	if len(top.Consumers) == 0 {
		text(&b, 20, 30, "no consumers", "normal", "#555")
	}
	limits := map[string]int{}
	types := map[string]string{}
	for _, q := range top.Queues {
		limits[q.Name] = q.DeliveryLimit
		types[q.Name] = string(q.Type)
	}
	events := ""
	if len(top.Exchanges) > 0 {
		events = top.Exchanges[0].Name // Build lists events, retry, dead
	}
	bindings := map[string][]string{}
	for _, bd := range top.Bindings {
		if bd.Exchange == events { // not the delay levels' prefixed copies
			bindings[bd.Queue] = append(bindings[bd.Queue], bd.Key)
		}
	}
	y := 20
	if top.Delay.Enabled() {
		delayLane(&b, y, top.Delay)
		y += laneH
	}
	for _, c := range top.Consumers {
		lane(&b, y, c, bindings[c.Queue], events, types[c.Queue], limits[c.Queue])
		y += laneH
	}
	b.WriteString(`</svg>`)
	return b.Bytes()
}

// delayLane draws the delay levels: published to the top level, held by
// the levels' TTL queues, then routed by the delivery exchange to every
// work queue whose patterns match, or to the unroutable lane.
func delayLane(b *bytes.Buffer, y int, d topology.Delay) {
	text(b, 20, y+12, "facts published for later", "bold", "#222")
	box(b, 20, y+30, 240, 44, "#fdf6e3", "#b58900", 0, fmt.Sprintf("%d delay levels (TTL queues)", d.Levels), d.Exchange)
	box(b, 340, y+30, 240, 44, "#eef3fb", "#4a6fa5", 0, "delivery exchange", d.Deliver)
	box(b, 660, y+30, 220, 44, "#f4f4f4", "#666", 0, "work queues", "by each consumer's patterns")
	box(b, 340, y+110, 240, 44, "#fbeeee", "#b03a2e", 0, "unroutable lane", d.Unroutable)
	edge(b, 260, y+52, 340, y+52, false)
	label(b, 300, y+24, "when due")
	edge(b, 580, y+52, 660, y+52, false)
	edge(b, 460, y+74, 460, y+110, false)
	label(b, 560, y+97, "no consumer bound")
}

func lane(b *bytes.Buffer, y int, c topology.Consumer, keys []string, events, queueType string, limit int) {
	text(b, 20, y+12, "consumer "+c.Name, "bold", "#222")
	box(b, 20, y+30, 200, 44, "#eef3fb", "#4a6fa5", 0, "exchange", events)
	work := queueType + " work queue"
	if limit > 0 {
		work += fmt.Sprintf(", delivery limit %d", limit)
	}
	box(b, 300, y+30, 240, 44, "#f4f4f4", "#666", 0, work, c.Queue)
	box(b, 620, y+30, 200, 44, "#eef8ee", "#3c7a3c", 22, "consumer", c.Name)
	edge(b, 220, y+52, 300, y+52, false)
	label(b, 260, y+24, strings.Join(keys, ", "))
	edge(b, 540, y+52, 620, y+52, false)

	if len(c.Tiers) > 0 {
		var delays []string
		seen := map[string]bool{}
		for _, t := range c.Tiers {
			if !seen[t.Queue] {
				seen[t.Queue] = true
				delays = append(delays, topology.FormatDelay(t.Delay))
			}
		}
		box(b, 300, y+110, 240, 44, "#fdf6e3", "#b58900", 0, "delay queues "+strings.Join(delays, ", "), c.Name+".retry.*")
		edge(b, 700, y+74, 540, y+122, true)
		label(b, 650, y+112, "retry via "+c.RetryExchange)
		edge(b, 420, y+110, 420, y+74, true)
		label(b, 470, y+95, "after the delay")
	}
	box(b, 880, y+110, 220, 44, "#fbeeee", "#b03a2e", 0, "poison queue", c.PoisonQueue)
	edge(b, 800, y+74, 950, y+110, false)
	label(b, 935, y+90, "give up via "+c.DeadExchange)
	if limit > 0 {
		fmt.Fprintf(b, `<path d="M540 66 C 640 %d, 760 %d, 880 %d" transform="translate(0 %d)" fill="none" stroke="#b03a2e" stroke-dasharray="5 4" marker-end="url(#arrow)"/>`, 150, 150, 66+70, y)
		label(b, 700, y+160, "over the delivery limit, via "+c.DeadExchange)
	}
}

func box(b *bytes.Buffer, x, y, w, h int, fill, stroke string, radius int, caption, name string) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="%d" fill="%s" stroke="%s"/>`, x, y, w, h, max(radius, 4), fill, stroke)
	text(b, x+10, y+17, caption, "normal", "#555")
	text(b, x+10, y+35, name, "bold", "#111")
}

func edge(b *bytes.Buffer, x1, y1, x2, y2 int, dashed bool) {
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="5 4"`
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#555"%s marker-end="url(#arrow)"/>`, x1, y1, x2, y2, dash)
}

func label(b *bytes.Buffer, x, y int, s string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#333" font-size="12">%s</text>`, x, y, esc(clip(s, 48)))
}

func text(b *bytes.Buffer, x, y int, s, weight, fill string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="%s" fill="%s">%s</text>`, x, y, weight, fill, esc(clip(s, 40)))
}

func esc(s string) string { return html.EscapeString(s) }

// clip shortens s to n runes, marking the cut, so a long name does not
// run out of its box.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
