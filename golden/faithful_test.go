package golden_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Amsterdam, whatever the machine has

	additional "github.com/warrenbus/warren/golden/additional/want"
	arrays "github.com/warrenbus/warren/golden/arrays/want"
	formats "github.com/warrenbus/warren/golden/formats/want"
	iglu "github.com/warrenbus/warren/golden/iglu/want"
	mixeddrafts "github.com/warrenbus/warren/golden/mixed-drafts/want"
	"github.com/warrenbus/warren/golden/mixed-drafts/want/mixeddraftstest"
	nullable "github.com/warrenbus/warren/golden/nullable/want"
	recursion "github.com/warrenbus/warren/golden/recursion/want"
	refs "github.com/warrenbus/warren/golden/refs/want"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/codec"
	"github.com/warrenbus/warren/runtime/schemaset"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// sampled decodes a golden case's sample into a new T.
func sampled[T any](t *testing.T, dir, name string) *T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	v := new(T)
	if err := codec.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// edited is a golden case's sample changed by edit, for a test of its
// generated Validate.
func edited[T any, P interface {
	*T
	codec.Validator
}](t *testing.T, dir, name string, edit func(P)) codec.Validator {
	t.Helper()
	v := P(sampled[T](t, dir, name))
	edit(v)
	return v
}

// A value built in Go that its JSON cannot hold (text that is not UTF-8,
// NaN or an infinity, a year of more or fewer than four digits) is
// refused by its generated Validate, which Publish runs, whichever way
// the generator wrote the type: a Shape (iglu), a struct spelled out
// (formats, arrays, nullable), a type checked by the embedded schema
// (additional), a union (recursion), a defined type (refs).
func TestGeneratedValidateRefusesWhatJSONCannotHold(t *testing.T) {
	const bad = "a\xffb"
	nan, inf := math.NaN(), math.Inf(1)
	y10000 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	yMinus1 := time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC)

	checkout := func(edit func(*iglu.CheckoutStarted)) codec.Validator {
		return edited(t, "iglu", "acme.checkout.started/full.json", edit)
	}
	payment := func(edit func(*formats.PaymentCaptured)) codec.Validator {
		return edited(t, "formats", "payment.captured/full.json", edit)
	}
	basket := func(edit func(*arrays.BasketUpdated)) codec.Validator {
		return edited(t, "arrays", "basket.updated/full.json", edit)
	}
	profile := func(edit func(*nullable.ProfileChanged)) codec.Validator {
		return edited(t, "nullable", "profile.changed/values.json", edit)
	}
	config := func(edit func(*additional.ConfigChanged)) codec.Validator {
		return edited(t, "additional", "config.changed/full.json", edit)
	}
	for _, tc := range []struct {
		name string
		v    codec.Validator
		want string
	}{
		// A Shape: runtime/codec walks it.
		{"Shape: NaN with exclusiveMinimum 0", checkout(func(v *iglu.CheckoutStarted) { v.Total = nan }), "/total: a finite number, got NaN"},
		{"Shape: +Inf", checkout(func(v *iglu.CheckoutStarted) { v.Total = inf }), "/total: a finite number, got +Inf"},
		{"Shape: -Inf", checkout(func(v *iglu.CheckoutStarted) { v.Total = -inf }), "/total: a finite number, got -Inf"},
		{"Shape: a string", checkout(func(v *iglu.CheckoutStarted) { v.CartID = bad }), "/cartId: a string of valid UTF-8, got invalid byte 0xff at offset 1"},
		{"Shape: an optional string", checkout(func(v *iglu.CheckoutStarted) { v.Coupon = schemaset.Some(bad) }), "/coupon: a string of valid UTF-8"},
		// Structs spelled out: their Validate calls the codec per field.
		{"spelled out: year 10000", payment(func(v *formats.PaymentCaptured) { v.CapturedAt = y10000 }), "/captured_at: a date-time in the years 0000 to 9999 (RFC 3339), got the year 10000"},
		{"spelled out: year -1", payment(func(v *formats.PaymentCaptured) { v.SettledAt = &yMinus1 }), "/settled_at: a date-time in the years 0000 to 9999 (RFC 3339), got the year -1"},
		{"spelled out: a date-time item", payment(func(v *formats.PaymentCaptured) { v.History = []time.Time{time.Now(), y10000} }), "/history/1: a date-time in the years 0000 to 9999"},
		{"spelled out: an optional string", payment(func(v *formats.PaymentCaptured) { s := bad; v.Reference = &s }), "/reference: a string of valid UTF-8"},
		{"spelled out: a property name", payment(func(v *formats.PaymentCaptured) {
			v.AdditionalProperties = map[string]json.RawMessage{bad: json.RawMessage("1")}
		}), `(root): property names of valid UTF-8, got "a\xffb"`},
		{"spelled out: a string item", basket(func(v *arrays.BasketUpdated) { v.Skus = []string{"ok", bad} }), "/skus/1: a string of valid UTF-8"},
		{"spelled out: a number item", basket(func(v *arrays.BasketUpdated) { v.Matrix = [][]float64{{1}, {2, nan}} }), "/matrix/1/1: a finite number, got NaN"},
		{"spelled out: a pointer", profile(func(v *nullable.ProfileChanged) { v.Score = &inf }), "/score: a finite number, got +Inf"},
		{"spelled out: a nullable pointer", profile(func(v *nullable.ProfileChanged) { s := bad; v.Nickname = &s }), "/nickname: a string of valid UTF-8"},
		{"spelled out: a Nullable", profile(func(v *nullable.ProfileChanged) { v.MiddleName = schemaset.Some(bad) }), "/middle_name: a string of valid UTF-8"},
		// Checked by the embedded schema, which sees the JSON written (NaN
		// as null, text as bytes): the Go values are checked first.
		{"embedded schema: a map's key", config(func(v *additional.ConfigChanged) { v.Labels = map[string]string{bad: "x"} }), `/labels: property names of valid UTF-8, got "a\xffb"`},
		{"embedded schema: a map's value", config(func(v *additional.ConfigChanged) { v.Labels = map[string]string{"team": bad} }), "/labels/team: a string of valid UTF-8"},
		// A union: each branch set is checked, then the JSON it writes.
		{"union: NaN", &recursion.Expr{Number: &nan}, "(root): a finite number, got NaN"},
		// A defined type.
		{"defined type", refs.OrderID(bad), "(root): a string of valid UTF-8"},
	} {
		err := tc.v.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %s", tc.name, err, tc.want)
		}
	}
}

// A time whose offset has seconds (local mean time, Amsterdam's before
// 1937) is written in UTC by the generated code, and read back as the
// same instant, not one moved by the seconds RFC 3339 cannot write.
func TestGeneratedTimeWithOffsetInSecondsRoundTrips(t *testing.T) {
	amsterdam, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(1900, 1, 1, 0, 0, 0, 0, amsterdam) // +00:19:32
	v := sampled[formats.PaymentCaptured](t, "formats", "payment.captured/full.json")
	v.CapturedAt, v.SettledAt, v.History = at, &at, []time.Time{at}
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back formats.PaymentCaptured
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	if !back.CapturedAt.Equal(at) || !back.SettledAt.Equal(at) || !back.History[0].Equal(at) {
		t.Errorf("%v written as %s, read back as %v", at, data, back.CapturedAt)
	}
}

// archive keeps the ObjectFinalized facts its consumer handles.
type archive struct {
	mu  sync.Mutex
	got []mixeddrafts.ObjectFinalized
}

func (a *archive) HandleObjectFinalized(_ context.Context, _ runtime.Delivery, f mixeddrafts.ObjectFinalized) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, f)
	return nil
}

func (a *archive) HandleIssueClosed(context.Context, runtime.Delivery, mixeddrafts.IssueClosed) error {
	return nil
}

func (a *archive) HandleShipmentDispatched(context.Context, runtime.Delivery, mixeddrafts.ShipmentDispatched) error {
	return nil
}

// Publish refuses what Validate refuses, before sending anything, rather
// than send what every consumer would poison; and a time whose offset has
// seconds reaches the consumer as the same instant.
func TestPublishRefusesWhatJSONCannotHold(t *testing.T) {
	mixeddraftstest.Run(t, func(t *testing.T, k *mixeddraftstest.Kit) {
		a := &archive{}
		k.StartArchiver(a)
		latin1 := "caf\xe9"
		y10000 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, tc := range []struct {
			v    mixeddrafts.ObjectFinalized
			want string
		}{
			{mixeddrafts.ObjectFinalized{Name: &latin1}, "does not match its schema: /name: a string of valid UTF-8, got invalid byte 0xe9 at offset 3"},
			{mixeddrafts.ObjectFinalized{Metadata: map[string]string{latin1: "x"}}, `does not match its schema: /metadata: property names of valid UTF-8, got "caf\xe9"`},
			{mixeddrafts.ObjectFinalized{TimeCreated: &y10000}, "does not match its schema: /timeCreated: a date-time in the years 0000 to 9999 (RFC 3339), got the year 10000"},
		} {
			if _, err := warrentest.TryPublish(k.Bus, mixeddrafts.FactObjectFinalized, &tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Publish: %v, want an error with %s", err, tc.want)
			}
		}
		if n := len(k.Published()); n != 0 {
			t.Fatalf("%d facts published, want none", n)
		}

		amsterdam, err := time.LoadLocation("Europe/Amsterdam")
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(1900, 1, 1, 0, 0, 0, 0, amsterdam) // +00:19:32
		k.PublishObjectFinalized(mixeddrafts.ObjectFinalized{TimeCreated: &at})
		k.Idle()
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.got) != 1 || a.got[0].TimeCreated == nil || !a.got[0].TimeCreated.Equal(at) {
			t.Errorf("published %v, handled %+v", at, a.got)
		}
	})
}
