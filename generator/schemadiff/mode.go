package schemadiff

import (
	"fmt"
	"strings"
)

// Direction is a set of the two ways a change can fail consumers while
// producers and consumers deploy on their own schedules.
type Direction uint8

const (
	// Forward is a consumer built from the old schema receiving facts
	// written under the new one: a producer deployed first.
	Forward Direction = 1 << iota
	// Backward is a consumer built from the new schema receiving facts
	// written under the old one: still queued, in a poison queue being
	// replayed, in an outbox, or from a producer not yet deployed.
	Backward

	// Neither is the empty set: the change fails nobody.
	Neither Direction = 0
	// Both is every direction.
	Both = Forward | Backward
)

// String names the set as the JSON output does: "none", "forward",
// "backward" or "both".
func (d Direction) String() string {
	switch d {
	case Neither:
		return "none"
	case Forward:
		return "forward"
	case Backward:
		return "backward"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// Mode is a compatibility mode, as Confluent Schema Registry names them:
// the directions in which every change must keep consumers working.
type Mode string

// The modes. FULL is the default: producers and consumers may then deploy
// in any order.
const (
	ModeBackward           Mode = "BACKWARD"            // new consumers read old facts: deploy consumers first
	ModeBackwardTransitive Mode = "BACKWARD_TRANSITIVE" // ... facts of every version since x-version was last raised
	ModeForward            Mode = "FORWARD"             // old consumers read new facts: deploy producers first
	ModeForwardTransitive  Mode = "FORWARD_TRANSITIVE"  // ... consumers of every version since x-version was last raised
	ModeFull               Mode = "FULL"                // both
	ModeFullTransitive     Mode = "FULL_TRANSITIVE"     // both, against every version since x-version was last raised
	ModeNone               Mode = "NONE"                // nothing is required; the report still says what breaks
	DefaultMode                 = ModeFull
)

// Modes lists every mode.
var Modes = []Mode{ModeBackward, ModeBackwardTransitive, ModeForward, ModeForwardTransitive, ModeFull, ModeFullTransitive, ModeNone}

// ParseMode reads a mode as the manifest writes it; "" is [DefaultMode].
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return DefaultMode, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("compatibility %q: expected one of %s", s, strings.Join(modeNames(), ", "))
}

func modeNames() []string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return names
}

// Requires returns the directions the mode requires to keep working.
func (m Mode) Requires() Direction {
	switch strings.TrimSuffix(string(m), "_TRANSITIVE") {
	case string(ModeBackward):
		return Backward
	case string(ModeForward):
		return Forward
	case string(ModeFull):
		return Both
	}
	return Neither
}

// Transitive reports whether the mode compares a fact with every version
// since its x-version was last raised, not only with the previous one.
func (m Mode) Transitive() bool { return strings.HasSuffix(string(m), "_TRANSITIVE") }
