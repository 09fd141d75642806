package poison

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// The kinds of failure a [Cause] tells apart.
const (
	KindValidation = "validation" // the payload does not match its fact's schema
	KindHandler    = "handler"    // the handler returned an error
	KindPanic      = "panic"      // the handler panicked
	KindBroker     = "broker"     // the broker dead-lettered it (delivery limit, rejected)
	KindUnknown    = "unknown"    // nobody recorded why
	// KindRefused: the consumer refused the message before any handler
	// ran (not a JSON envelope, an incomplete one, not UTF-8, too large,
	// a content type or encoding it does not read, a payload that does
	// not decode, a fact it has no route for): the producer's mistake or
	// the bindings', not the handler's.
	KindRefused = "refused"
	// KindVersion: the fact is in a version the consumer does not read,
	// and the consumer's own schema rejected its payload (a
	// *runtime.VersionError, with header x-version-mismatch): the
	// producer deployed a version its consumer does not read yet. Grouped
	// by fact and versions, whatever the payload's problems; replay the
	// group once the consumer reads that version.
	KindVersion = "version"
	// KindUpcast: the consumer's upcast of an older version of the fact
	// (runtime.Upcast) returned an error, or a result that does not match
	// the schema of the version the route reads: the consumer's own code,
	// not the producer's message.
	KindUpcast = "upcast"
)

// versionMismatch is how the runtime's *runtime.VersionError begins: the
// fact and its version, the versions the consumer reads. What follows is
// the payload's problems, which do not change the cause.
var versionMismatch = regexp.MustCompile(`^(\S+ version \d+ cannot be read by a consumer that reads versions [\d,]+): `)

// upcastFailure is how the runtime words a failed upcast of an older
// version (runtime.Upcast, read by the consumer's decode): the fact and
// version, then the upcast's error, or the upcast's result refused by the
// schema of the version the route reads.
var upcastFailure = regexp.MustCompile(`(?s)^payload of (\S+) version (\d+): (?:upcast version \d+: (.*)|version \d+, upcast: (the result does not match the schema of the version the route reads: .*))$`)

// refusals are how the runtime's refusals of a message begin (its
// wording, in runtime's body, envelope and routing checks).
var refusals = regexp.MustCompile(`^(?:body is not a JSON envelope: |envelope incomplete: |body is not valid UTF-8: |body of \d+ bytes is over the consumer's limit|content_encoding "|content_type "|fact "[^"]*" is not handled by consumer |decode \S+ payload: |payload of \S+ version \d+: )`)

// Cause is why a poison message failed, with what varies from one message
// to the next (ids, numbers, quoted values) masked, so that the messages
// that failed for the same reason have the same Cause.
type Cause struct {
	Kind string `json:"kind"`
	// Problems are a validation failure's JSON pointers (array indices
	// as *) and rules (the values found masked), sorted.
	Problems []Problem `json:"problems,omitempty"`
	// Exception is the error or exception type named at the start of a
	// handler's error (KeyError, java.lang.IllegalStateException, runtime
	// error), "" when it names none.
	Exception string `json:"exception,omitempty"`
	// Text is the normalised failure: the handler's error with uuids,
	// long hex and numbers replaced by <uuid>, <hex> and <n>, and quoted
	// strings by "…"; the broker's reason; a validation failure's
	// problems.
	Text string `json:"text"`
}

// Problem is one place where a payload does not match its schema.
type Problem struct {
	Pointer string `json:"pointer"` // "" is the whole payload
	Rule    string `json:"rule"`
}

// ID is a short stable name for the cause: the same cause has the same ID
// in every listing and on every machine.
func (c Cause) ID() string {
	sum := sha256.Sum256([]byte(c.Kind + "\x00" + c.Exception + "\x00" + c.Text))
	return hex.EncodeToString(sum[:6])
}

// CauseOf reads the cause of a poison message from its failure headers
// (x-failure, else x-death).
func CauseOf(m Message) Cause {
	failure, recorded := m.Headers[runtime.HeaderFailure].(string)
	switch {
	case !recorded && m.Failure != "":
		// The broker dead-lettered it; its reason is the cause.
		return Cause{Kind: KindBroker, Text: brokerReason(m)}
	case strings.TrimSpace(failure) == "":
		return Cause{Kind: KindUnknown, Text: "no failure recorded"}
	}
	if problems, ok := validationProblems(failure); ok {
		texts := make([]string, len(problems))
		for i, p := range problems {
			texts[i] = pointerText(p.Pointer) + ": " + p.Rule
		}
		return Cause{Kind: KindValidation, Problems: problems, Text: strings.Join(texts, "; ")}
	}
	if mm := versionMismatch.FindStringSubmatch(failure); mm != nil {
		// The versions stay: a fact in version 3 is another group than
		// one in version 2, fixed by another deploy.
		return Cause{Kind: KindVersion, Text: mm[1]}
	}
	if up := upcastFailure.FindStringSubmatch(failure); up != nil {
		text := up[3] + up[4]
		return Cause{Kind: KindUpcast, Exception: exceptionOf(text), Text: "upcast of " + up[1] + " version " + up[2] + ": " + Mask(text)}
	}
	c := Cause{Kind: KindHandler}
	text := failure
	if rest, ok := strings.CutPrefix(text, "handler panicked: "); ok {
		c.Kind, text = KindPanic, rest
	} else if refusals.MatchString(text) {
		c.Kind = KindRefused
	}
	c.Exception = exceptionOf(text)
	c.Text = Mask(text)
	return c
}

func pointerText(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func brokerReason(m Message) string {
	entries, _ := m.Headers["x-death"].([]any)
	for _, e := range entries {
		if t, ok := e.(amqp.Table); ok {
			if reason, _ := t["reason"].(string); reason != "" {
				return "dead-lettered by the broker: " + reason
			}
		}
	}
	return "dead-lettered by the broker"
}

// validationPrefix starts the failure of a payload that does not match
// its schema (the runtime's wording); the problems follow it.
var validationPrefix = regexp.MustCompile(`^payload of \S+ does not match its schema: (?:does not match schema \S+: )?`)

// validationProblems reads the problems of a validation failure:
// "<pointer>: <rule>" each, separated by "; ".
func validationProblems(failure string) ([]Problem, bool) {
	loc := validationPrefix.FindStringIndex(failure)
	if loc == nil {
		return nil, false
	}
	var out []Problem
	for _, part := range strings.Split(strings.TrimSuffix(failure[loc[1]:], "..."), "; ") {
		ptr, rule, ok := strings.Cut(part, ": ")
		if !ok {
			continue // cut short by x-failure's bound
		}
		if ptr == "(root)" {
			ptr = ""
		}
		p := Problem{Pointer: maskIndices(ptr), Rule: maskRule(rule)}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	slices.SortFunc(out, func(a, b Problem) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Rule, b.Rule)
	})
	return out, true
}

var indexToken = regexp.MustCompile(`/[0-9]+(/|$)`)

// maskIndices writes a pointer's array indices as *: /lines/3/sku is
// /lines/*/sku.
func maskIndices(ptr string) string {
	for indexToken.MatchString(ptr) {
		ptr = indexToken.ReplaceAllString(ptr, "/*$1")
	}
	return ptr
}

var (
	// "got <value>" in both validators' rules: the value found.
	gotValue = regexp.MustCompile(`\bgot [^,;]+`)
	// A rule that starts with the value found: "'x' does not match
	// pattern", "'x' is not valid 'email'".
	leadingValue = regexp.MustCompile(`^(?:'[^']*'|"[^"]*"|\S+) (does not match pattern|is not valid)`)
	// "items at 1 and 3 are equal", "items 1 and 3 are equal".
	itemIndices = regexp.MustCompile(`items (at )?[0-9]+ and [0-9]+`)
)

// maskRule masks the value a rule found and keeps what the rule wants.
func maskRule(rule string) string {
	rule = gotValue.ReplaceAllString(rule, "got …")
	rule = leadingValue.ReplaceAllString(rule, "… $1")
	rule = itemIndices.ReplaceAllString(rule, "items ${1}<n> and <n>")
	return rule
}

var (
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'[^']*'|` + "`[^`]*`")
	uuid   = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	// Hex and base-32 ids (hashes, ULIDs, object ids): long runs mixing
	// letters and digits.
	longID = regexp.MustCompile(`\b(?:[0-9a-fA-F]{12,}|[0-9A-HJKMNP-TV-Z]{26})\b`)
	number = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`)
	// Leading error and exception type names: KeyError, java.io.IOException,
	// pq.Error, "runtime error".
	exception = regexp.MustCompile(`^(?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception|Fault)\b|^runtime error\b`)
)

// Mask replaces what differs between messages failing for the same reason:
// quoted strings become "…", uuids <uuid>, long hex and base-32 ids <hex>,
// numbers (digits within words too: ord-123, #42) <n>; white space is
// collapsed.
func Mask(text string) string {
	text = quoted.ReplaceAllString(text, `"…"`)
	text = uuid.ReplaceAllString(text, "<uuid>")
	text = longID.ReplaceAllString(text, "<hex>")
	text = number.ReplaceAllString(text, "<n>")
	return strings.Join(strings.Fields(text), " ")
}

func exceptionOf(text string) string {
	return exception.FindString(strings.TrimSpace(text))
}

// Group is the messages of one queue that failed for the same [Cause].
type Group struct {
	ID    string `json:"id"` // Cause.ID
	Cause Cause  `json:"cause"`
	Count int    `json:"count"`
	// FirstSeen and LastSeen are the earliest and latest x-failed-at of
	// the group (or the broker's x-death time); zero when none recorded.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// RoutingKeys count the group's messages per routing key, most first.
	RoutingKeys []KeyCount `json:"routing_keys"`
	// Example is the failure of the group's first message, as recorded.
	Example string `json:"example"`
}

// KeyCount is how many messages of a group have one routing key.
type KeyCount struct {
	Key   string `json:"key"`
	Count int    `json:"count"`
}

// Groups reads the queue from stands for in consumer c and groups its
// messages by cause, most messages first. It reads as [List] does and
// leaves every message where it was, in its place; it keeps no message in
// memory, only the groups.
func Groups(ctx context.Context, conn Broker, c topology.Consumer, from Source) ([]Group, error) {
	var g grouper
	err := walk(ctx, conn, c, from.Queue(c), Filter{}, func(m Message) error {
		g.add(m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", from.Queue(c), err)
	}
	return g.groups(), nil
}

// FindGroup returns the group with id among groups, or an error that says
// which ids there are.
func FindGroup(groups []Group, id string, queue string) (Group, error) {
	for _, g := range groups {
		if g.ID == id {
			return g, nil
		}
	}
	if len(groups) == 0 {
		return Group{}, fmt.Errorf("%w: %s is empty, so it has no group %q", ErrNoGroup, queue, id)
	}
	ids := make([]string, len(groups))
	for i, g := range groups {
		ids[i] = g.ID
	}
	return Group{}, fmt.Errorf("%w: no group %q in %s (now); expected one of %s", ErrNoGroup, id, queue, strings.Join(ids, ", "))
}

// ErrNoGroup is matched by the error of [FindGroup] for an unknown id.
var ErrNoGroup = fmt.Errorf("unknown group")

type grouper struct {
	byID  map[string]*Group
	keys  map[string]map[string]int
	order []string
}

func (g *grouper) add(m Message) {
	cause := CauseOf(m)
	id := cause.ID()
	if g.byID == nil {
		g.byID, g.keys = map[string]*Group{}, map[string]map[string]int{}
	}
	gr, ok := g.byID[id]
	if !ok {
		gr = &Group{ID: id, Cause: cause, Example: m.Failure}
		g.byID[id], g.keys[id] = gr, map[string]int{}
		g.order = append(g.order, id)
	}
	gr.Count++
	g.keys[id][m.RoutingKey]++
	if at := m.FailedAt; !at.IsZero() {
		if gr.FirstSeen.IsZero() || at.Before(gr.FirstSeen) {
			gr.FirstSeen = at
		}
		if at.After(gr.LastSeen) {
			gr.LastSeen = at
		}
	}
}

func (g *grouper) groups() []Group {
	out := make([]Group, 0, len(g.order))
	for _, id := range g.order {
		gr := *g.byID[id]
		for k, n := range g.keys[id] {
			gr.RoutingKeys = append(gr.RoutingKeys, KeyCount{Key: k, Count: n})
		}
		slices.SortFunc(gr.RoutingKeys, func(a, b KeyCount) int {
			if a.Count != b.Count {
				return b.Count - a.Count
			}
			return strings.Compare(a.Key, b.Key)
		})
		out = append(out, gr)
	}
	// The largest first; ties by first failure, so that grouping the same
	// messages again lists them alike whatever order a scan met them in,
	// and then in the order the queue holds them.
	slices.SortStableFunc(out, func(a, b Group) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return a.FirstSeen.Compare(b.FirstSeen)
	})
	return out
}
