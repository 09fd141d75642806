package schemadiff

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// Labels name the two directories when a report prints positions: a
// position in the old directory prints as Old + "/" + file. They are what
// the user typed ("events", "../main/events") or a git revision
// ("origin/main:events"), so that a printed position can be opened.
type Labels struct {
	Old, New string
}

func (l Labels) file(p Pos) string {
	root := l.New
	switch {
	case p.Side == Old && p.Label != "":
		root = p.Label
	case p.Side == Old:
		root = l.Old
	}
	if root == "" || root == "." {
		return p.File
	}
	if strings.HasSuffix(root, ":") {
		return root + p.File // a git revision with the repository root: "HEAD:"
	}
	return path.Join(root, p.File)
}

func (l Labels) position(p Pos) string {
	if p.Line == 0 {
		return l.file(p)
	}
	return fmt.Sprintf("%s:%d:%d", l.file(p), p.Line, p.Col)
}

// subject names what a change is about: the fact and the place in its
// schema, or the consumer.
func (c Change) subject() string {
	switch {
	case c.Consumer != "" && c.Fact != "":
		return fmt.Sprintf("consumer %s, fact %s", c.Consumer, c.Fact)
	case c.Consumer != "":
		return "consumer " + c.Consumer
	case c.Path != "":
		return c.Fact + " " + c.Path
	}
	return c.Fact
}

// breaksNote says which directions a change breaks and in which mode, for
// the text and Markdown reports ("" when none), with the version a
// _TRANSITIVE mode found it against; code formats names for the format.
func (c Change) breaksNote(text, code func(string) string) string {
	var note string
	switch c.Breaks {
	case Forward:
		note = "breaks forward (old consumers, new facts)"
	case Backward:
		note = "breaks backward (new consumers, old facts)"
	case Both:
		note = "breaks both ways"
	default:
		return ""
	}
	note = text(note) + " in " + code(string(c.Mode))
	if c.Against != "" {
		note += ", against " + code(c.Against)
	}
	return note
}

func plain(s string) string { return s }

// WriteText prints one line per change,
//
//	events/order/placed.json:32:13: breaking: property-removed: order.placed /properties/note: property "note" was removed: ...; breaks backward (new consumers, old facts) in FULL
//
// breaking changes first, then a summary line and the deploy order of
// every fact whose changes break in one direction only.
func (r *Report) WriteText(w io.Writer, l Labels) error {
	var b strings.Builder
	for _, c := range r.Changes {
		fmt.Fprintf(&b, "%s: %s: %s: %s: %s", l.position(c.Pos), c.Verdict, c.Rule, c.subject(), c.Message)
		if note := c.breaksNote(plain, plain); note != "" {
			b.WriteString("; " + note)
		}
		b.WriteString("\n")
	}
	b.WriteString(r.summary())
	b.WriteString("\n")
	for _, d := range r.Deploys {
		b.WriteString("deploy order: " + d.Message + "\n")
	}
	for _, m := range r.Migrations {
		b.WriteString("migration: " + m.Fact + ": " + m.Message + "\n")
	}
	if hint := r.hint(plain); hint != "" {
		b.WriteString(hint)
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// summary counts the changes in one sentence.
func (r *Report) summary() string {
	if len(r.Changes) == 0 {
		return "no changes to facts or consumers"
	}
	return strings.Join(r.counts(), ", ")
}

// counts counts the changes of each verdict that has any, the most
// severe first.
func (r *Report) counts() []string {
	var parts []string
	if n := r.Unannounced(); n > 0 {
		parts = append(parts, plural(n, r.breakingNoun()))
	}
	if n := r.Intentional(); n > 0 {
		parts = append(parts, plural(n, "intentional breaking change"))
	}
	if n := r.Ordered(); n > 0 {
		parts = append(parts, plural(n, "change")+" safe only in deploy order")
	}
	if n := r.Compatible(); n > 0 {
		parts = append(parts, plural(n, "compatible change"))
	}
	return parts
}

// breakingNoun names a [Breaking] change in the summary.
func (r *Report) breakingNoun() string {
	if r.Importer {
		return "breaking change for the consumers here"
	}
	return "unannounced breaking change"
}

// hint says how to announce the unannounced breaking changes; code formats
// a fact name for the output format.
func (r *Report) hint(code func(string) string) string {
	if r.Importer {
		if r.Unannounced() == 0 {
			return ""
		}
		return "The consumers here break on this update whether or not the producer announced it: adapt them to the new schema and deploy them as the deploy order says, or stay on the old version."
	}
	var raise, deprecate, added, direct, rekeyed []string
	consumers := false
	// A consumer that stops receiving a fact whose routing key changed is
	// part of that change, which no x-version announces.
	keyChanged := map[string]bool{}
	for _, c := range r.Changes {
		if c.Rule == RoutingKeyChanged && c.Verdict == Breaking {
			keyChanged[c.Fact] = true
		}
	}
	for _, c := range r.Changes {
		if c.Verdict != Breaking {
			continue
		}
		v, _ := r.Version(c.Fact)
		switch {
		case c.Rule == FactRemoved:
			deprecate = appendOnce(deprecate, code(c.Fact))
		case c.Rule == VersionRetired:
			// The message says how to retire a version in two steps.
		case c.Consumer != "" && c.Fact == "", streamRules[c.Rule]:
			// Queue and stream settings: the message says what the
			// operator does.
		case c.Rule == StreamPublishDirect:
			direct = appendOnce(direct, code(c.Fact))
		case c.Rule == RoutingKeyChanged:
			rekeyed = appendOnce(rekeyed, code(c.Fact))
		case c.Rule == BindingStartedMatching && v.Old == 0:
			added = appendOnce(added, code(c.Fact))
		case c.Consumer != "":
			consumers = consumers || !keyChanged[c.Fact]
		case c.Rule != VersionLowered:
			raise = appendOnce(raise, code(c.Fact))
		}
	}
	var lines []string
	if len(raise) > 0 {
		lines = append(lines, fmt.Sprintf("To announce a breaking change, raise %s of %s; to allow it in one deploy order, choose a mode that does not require the direction it breaks (%s on the fact, or %s in the manifest).",
			code("x-version"), strings.Join(raise, ", "), code("x-compatibility"), code("compatibility")))
	}
	if len(rekeyed) > 0 {
		lines = append(lines, fmt.Sprintf("A routing key cannot change in place, and raising %s does not announce it: every version of a fact shares its routing key, and bindings and queued facts use the old one. Declare %s as a new fact in a file of its own beside the old one, publish both until every consumer binds the new key and has drained the old, then mark the old fact %s, release that, and remove it.",
			code("x-version"), strings.Join(rekeyed, ", "), code(`"deprecated": true`)))
	}
	if len(deprecate) > 0 {
		lines = append(lines, fmt.Sprintf("To remove a fact, first mark it %s and release that: %s.", code(`"deprecated": true`), strings.Join(deprecate, ", ")))
	}
	if len(added) > 0 {
		lines = append(lines, fmt.Sprintf("A new fact that existing bindings match is poisoned by the consumers built before it: deploy them first and allow that order with %s on %s, or narrow their bindings.",
			code(`"x-compatibility": "BACKWARD"`), strings.Join(added, ", ")))
	}
	if len(direct) > 0 {
		lines = append(lines, fmt.Sprintf("A fact written directly into a stream (%s) reaches no queue bound to it on the events exchange, where other services bind it in manifests this directory never sees: keep %s for facts other services bind, or, once their consumers read the stream, announce the change by raising %s.",
			strings.Join(direct, ", "), code(`"publish": "exchange"`), code("x-version")))
	}
	if consumers {
		lines = append(lines, "Consumers have no x-version: a consumer that starts or stops receiving a fact is announced by the fact's x-version, or allowed by its mode.")
	}
	return strings.Join(lines, "\n")
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

var verdictMark = map[Verdict]string{
	Breaking:    "🔴 breaking",
	Intentional: "🟠 intentional",
	Ordered:     "🟡 ordered",
	Compatible:  "🟢 compatible",
}

// WriteMarkdown renders the report as a compact pull-request comment: a
// heading that says whether the change can merge as it is, then one table
// row per change, breaking changes first.
func (r *Report) WriteMarkdown(w io.Writer, l Labels) error {
	var b strings.Builder
	var head string
	switch {
	case r.Unannounced() > 0:
		head = plural(r.Unannounced(), r.breakingNoun())
	case r.Intentional() > 0:
		head = plural(r.Intentional(), "intentional breaking change")
	case r.Ordered() > 0:
		head = "compatible in deploy order"
	case len(r.Changes) > 0:
		head = "compatible"
	default:
		b.WriteString("### warren diff: no changes\n\nNo fact or consumer changed.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("### warren diff: " + head + "\n\n")
	// The line under the heading counts what the heading does not, so
	// that a reader is not told the same number twice.
	if counts := r.counts(); counts[0] == head {
		if len(counts) > 1 {
			b.WriteString("Also " + strings.Join(counts[1:], ", ") + ".\n\n")
		}
	} else {
		b.WriteString(strings.Join(counts, ", ") + ".\n\n")
	}
	b.WriteString("| | Rule | Subject | Change | Breaks | Where |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, c := range r.Changes {
		subject := ""
		switch {
		case c.Consumer != "" && c.Fact != "":
			subject = mdCode(c.Consumer) + " ← " + mdCode(c.Fact)
		case c.Consumer != "":
			subject = mdCode(c.Consumer)
		default:
			subject = mdCode(c.Fact)
			if c.Path != "" {
				subject += " " + mdCode(c.Path)
			}
		}
		where := l.file(c.Pos)
		if c.Pos.Line > 0 {
			where = fmt.Sprintf("%s:%d", where, c.Pos.Line)
		}
		breaks := "–"
		if note := c.breaksNote(mdText, mdCode); note != "" {
			breaks = note
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", verdictMark[c.Verdict], mdCode(c.Rule), subject, mdText(c.Message), breaks, mdCode(where))
	}
	if len(r.Deploys) > 0 {
		b.WriteString("\n**Deploy order**\n\n")
		for _, d := range r.Deploys {
			b.WriteString("- " + mdText(d.Message) + "\n")
		}
	}
	if len(r.Migrations) > 0 {
		b.WriteString("\n**Migration**\n\n")
		for _, m := range r.Migrations {
			mark := "⚠️"
			if m.Safe {
				mark = "✅"
			}
			b.WriteString("- " + mark + " " + mdCode(m.Fact) + ": " + mdText(m.Message) + "\n")
		}
	}
	if hint := r.hint(mdCode); hint != "" {
		b.WriteString("\n" + hint + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCode renders s as inline code inside a table cell. A '|' would end the
// cell even inside code, so it is escaped; a backtick gets a longer fence.
func mdCode(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// mdText escapes text for a table cell: no line breaks, no cell ends, no
// accidental HTML or emphasis from schema content.
func mdText(s string) string {
	r := strings.NewReplacer("\r", "", "\n", " ", "|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`)
	return r.Replace(s)
}

// jsonReport is the shape of --format json. Field names are part of the
// CLI's contract.
type jsonReport struct {
	Unannounced int             `json:"unannounced"`
	Intentional int             `json:"intentional"`
	Ordered     int             `json:"ordered"`
	Compatible  int             `json:"compatible"`
	Changes     []jsonChange    `json:"changes"`
	Versions    []jsonVersions  `json:"versions"`
	Deploy      []jsonDeploy    `json:"deploy"`
	Migrations  []jsonMigration `json:"migrations,omitempty"`
}

type jsonMigration struct {
	Fact    string `json:"fact"`
	Safe    bool   `json:"safe"`
	Message string `json:"message"`
}

type jsonDeploy struct {
	Fact      string   `json:"fact"`
	Breaks    string   `json:"breaks"`
	First     string   `json:"first,omitempty"`
	Consumers []string `json:"consumers,omitempty"`
	Message   string   `json:"message"`
}

type jsonChange struct {
	Rule     string `json:"rule"`
	Verdict  string `json:"verdict"`
	Breaking bool   `json:"breaking"`
	Breaks   string `json:"breaks"`
	Mode     string `json:"mode"`
	Against  string `json:"against,omitempty"`
	Fact     string `json:"fact,omitempty"`
	Consumer string `json:"consumer,omitempty"`
	Path     string `json:"path"`
	Side     string `json:"side"`
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
	Pointer  string `json:"pointer"`
	Message  string `json:"message"`
}

type jsonVersions struct {
	Fact string `json:"fact"`
	Old  int    `json:"old,omitempty"`
	New  int    `json:"new,omitempty"`
}

// WriteJSON writes the report as one JSON document, for scripts.
func (r *Report) WriteJSON(w io.Writer) error {
	out := jsonReport{
		Unannounced: r.Unannounced(),
		Intentional: r.Intentional(),
		Ordered:     r.Ordered(),
		Compatible:  r.Compatible(),
		Changes:     []jsonChange{},
		Versions:    []jsonVersions{},
		Deploy:      []jsonDeploy{},
	}
	for _, c := range r.Changes {
		out.Changes = append(out.Changes, jsonChange{
			Rule: c.Rule, Verdict: string(c.Verdict), Breaking: c.Breaking,
			Breaks: c.Breaks.String(), Mode: string(c.Mode), Against: c.Against,
			Fact: c.Fact, Consumer: c.Consumer, Path: c.Path,
			Side: string(c.Pos.Side), File: c.Pos.File, Line: c.Pos.Line, Col: c.Pos.Col, Pointer: c.Pos.Pointer,
			Message: c.Message,
		})
	}
	for _, v := range r.Versions {
		out.Versions = append(out.Versions, jsonVersions(v))
	}
	for _, d := range r.Deploys {
		out.Deploy = append(out.Deploy, jsonDeploy{Fact: d.Fact, Breaks: d.Breaks.String(), First: d.First, Consumers: d.Consumers, Message: d.Message})
	}
	for _, m := range r.Migrations {
		out.Migrations = append(out.Migrations, jsonMigration(m))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
