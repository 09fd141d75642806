package gogen

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/runtime/topology"
)

func renderCode(c jen.Code) string { return fmt.Sprintf("%#v", jen.Null().Add(c)) }

func TestDurationLit(t *testing.T) {
	for d, want := range map[time.Duration]string{
		20 * time.Millisecond:   "20 * time.Millisecond",
		1500 * time.Millisecond: "1500 * time.Millisecond",
		time.Second:             "time.Second",
		90 * time.Second:        "90 * time.Second",
		2 * time.Minute:         "2 * time.Minute",
		time.Hour:               "time.Hour",
		time.Microsecond:        "time.Duration(1000)",
		0:                       "time.Duration(0)",
	} {
		if got := renderCode(durationLit(d)); got != want {
			t.Errorf("durationLit(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestValueLit(t *testing.T) {
	q := topology.Queue{
		Name: "c.retry.20ms", Role: topology.RoleRetry, Type: "lazy", MessageTTL: 20 * time.Millisecond,
		DeadLetter: &topology.DeadLetter{RoutingKey: "c\"`"},
	}
	got := renderCode(valueLit(reflect.ValueOf(q)))
	for _, want := range []string{
		`Name:       "c.retry.20ms",`,
		`Role:       topology.RoleRetry,`,
		`Type:       topology.QueueType("lazy"),`, // not a known constant
		`MessageTTL: 20 * time.Millisecond,`,
		`DeadLetter: &topology.DeadLetter{Exchange: "", RoutingKey: "c\"` + "`" + `"},`, // "" is the default exchange
	} {
		if !strings.Contains(got, want) {
			t.Errorf("literal lacks %q:\n%s", want, got)
		}
	}
	for _, absent := range []string{"Consumer:", "DeliveryLimit:", "AtLeastOnce:"} {
		if strings.Contains(got, absent) {
			t.Errorf("literal writes the zero field %s:\n%s", absent, got)
		}
	}
}
