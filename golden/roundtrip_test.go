// Package golden_test checks the behaviour of the golden packages: sample
// documents decode into the generated types and encode back to the same
// JSON, which still satisfies the fact's schema. Every golden package is
// imported here, and only here, which also keeps them compiling.
package golden_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	additional "github.com/warrenbus/warren/golden/additional/want"
	allof "github.com/warrenbus/warren/golden/allof/want"
	arrays "github.com/warrenbus/warren/golden/arrays/want"
	consumers "github.com/warrenbus/warren/golden/consumers/want"
	defaults "github.com/warrenbus/warren/golden/defaults/want"
	docs "github.com/warrenbus/warren/golden/docs/want"
	enums "github.com/warrenbus/warren/golden/enums/want"
	factroots "github.com/warrenbus/warren/golden/fact-roots/want"
	formats "github.com/warrenbus/warren/golden/formats/want"
	iglu "github.com/warrenbus/warren/golden/iglu/want"
	importsversions "github.com/warrenbus/warren/golden/imports-versions/want"
	imports "github.com/warrenbus/warren/golden/imports/want"
	mixeddrafts "github.com/warrenbus/warren/golden/mixed-drafts/want"
	names "github.com/warrenbus/warren/golden/names/want"
	nested "github.com/warrenbus/warren/golden/nested/want"
	nullable "github.com/warrenbus/warren/golden/nullable/want"
	objects "github.com/warrenbus/warren/golden/objects/want"
	ordering "github.com/warrenbus/warren/golden/ordering/want"
	patterns "github.com/warrenbus/warren/golden/patterns/want"
	recursionallof "github.com/warrenbus/warren/golden/recursion-allof/want"
	recursion "github.com/warrenbus/warren/golden/recursion/want"
	refbypath "github.com/warrenbus/warren/golden/ref-by-path/want"
	refs "github.com/warrenbus/warren/golden/refs/want"
	requests "github.com/warrenbus/warren/golden/requests/want"
	rulenames "github.com/warrenbus/warren/golden/rule-names/want"
	sagas "github.com/warrenbus/warren/golden/sagas/want"
	streams "github.com/warrenbus/warren/golden/streams/want"
	unions "github.com/warrenbus/warren/golden/unions/want"
	vendorshapes "github.com/warrenbus/warren/golden/vendor-shapes/want"
	versions "github.com/warrenbus/warren/golden/versions/want"
	wild "github.com/warrenbus/warren/golden/wild/want"
	wiring "github.com/warrenbus/warren/golden/wiring/want"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/codec"
	"github.com/warrenbus/warren/runtime/topology"
)

// topologies maps each golden case to the Topology its package declares.
var topologies = map[string]topology.Topology{
	"additional":       additional.Topology,
	"allof":            allof.Topology,
	"arrays":           arrays.Topology,
	"consumers":        consumers.Topology,
	"defaults":         defaults.Topology,
	"docs":             docs.Topology,
	"enums":            enums.Topology,
	"fact-roots":       factroots.Topology,
	"formats":          formats.Topology,
	"iglu":             iglu.Topology,
	"imports":          imports.Topology,
	"imports-versions": importsversions.Topology,
	"mixed-drafts":     mixeddrafts.Topology,
	"names":            names.Topology,
	"nested":           nested.Topology,
	"nullable":         nullable.Topology,
	"objects":          objects.Topology,
	"ordering":         ordering.Topology,
	"patterns":         patterns.Topology,
	"recursion":        recursion.Topology,
	"recursion-allof":  recursionallof.Topology,
	"ref-by-path":      refbypath.Topology,
	"refs":             refs.Topology,
	"requests":         requests.Topology,
	"rule-names":       rulenames.Topology,
	"sagas":            sagas.Topology,
	"streams":          streams.Topology,
	"unions":           unions.Topology,
	"vendor-shapes":    vendorshapes.Topology,
	"versions":         versions.Topology,
	"wild":             wild.Topology,
	"wiring":           wiring.Topology,
}

// fact ties a golden fact to its generated type.
type fact struct {
	desc runtime.Fact
	new  func() any // a pointer to a zero value of the generated type
}

func of[T any](f runtime.Fact) fact { return fact{f, func() any { return new(T) }} }

// facts maps "<case>/<routing key>" to the generated code, for the samples
// under golden/<case>/samples/<routing key>/.
var facts = map[string]fact{
	"additional/config.changed":  of[additional.ConfigChanged](additional.FactConfigChanged),
	"allof/user.registered":      of[allof.UserRegistered](allof.FactUserRegistered),
	"allof/user.deleted":         of[allof.UserDeleted](allof.FactUserDeleted),
	"arrays/basket.updated":      of[arrays.BasketUpdated](arrays.FactBasketUpdated),
	"consumers/order.placed":     of[consumers.OrderPlaced](consumers.FactOrderPlaced),
	"defaults/job.queued":        of[defaults.JobQueued](defaults.FactJobQueued),
	"docs/note.added":            of[docs.NoteAdded](docs.FactNoteAdded),
	"enums/ticket.opened":        of[enums.TicketOpened](enums.FactTicketOpened),
	"formats/payment.captured":   of[formats.PaymentCaptured](formats.FactPaymentCaptured),
	"iglu/acme.checkout.started": of[iglu.CheckoutStarted](iglu.FactCheckoutStarted),
	"iglu/acme.refund.issued":    of[iglu.RefundIssued](iglu.FactRefundIssued),

	"mixed-drafts/gcp.storage.object.finalized": of[mixeddrafts.ObjectFinalized](mixeddrafts.FactObjectFinalized),
	"mixed-drafts/github.issue.closed":          of[mixeddrafts.IssueClosed](mixeddrafts.FactIssueClosed),
	"mixed-drafts/std.shipment.dispatched":      of[mixeddrafts.ShipmentDispatched](mixeddrafts.FactShipmentDispatched),

	"fact-roots/github.push.received":      of[factroots.PushReceived](factroots.FactPushReceived),
	"fact-roots/storage.object.finalized":  of[factroots.ObjectFinalized](factroots.FactObjectFinalized),
	"fact-roots/audit.logged":              of[factroots.AuditLogged](factroots.FactAuditLogged),
	"fact-roots/order.placed":              of[factroots.OrderLines](factroots.FactOrderLines),
	"fact-roots/counter.ticked":            of[factroots.CounterTicked](factroots.FactCounterTicked),
	"fact-roots/user.merged":               of[factroots.UserMerged](factroots.FactUserMerged),
	"fact-roots/payment.settled":           of[factroots.PaymentSettled](factroots.FactPaymentSettled),
	"names/user.signed_up":                 of[names.UserSignedUp](names.FactUserSignedUp),
	"nested/shipment.sent":                 of[nested.ShipmentSent](nested.FactShipmentSent),
	"nullable/profile.changed":             of[nullable.ProfileChanged](nullable.FactProfileChanged),
	"objects/order.placed":                 of[objects.OrderPlaced](objects.FactOrderPlaced),
	"ordering/order.placed":                of[ordering.OrderPlaced](ordering.FactOrderPlaced),
	"ordering/order.shipped":               of[ordering.OrderShipped](ordering.FactOrderShipped),
	"ordering/payment.received":            of[ordering.PaymentReceived](ordering.FactPaymentReceived),
	"ordering/stock.counted":               of[ordering.StockCounted](ordering.FactStockCounted),
	"patterns/search.index.created":        of[patterns.IndexCreated](patterns.FactIndexCreated),
	"recursion/tree.changed":               of[recursion.TreeChanged](recursion.FactTreeChanged),
	"recursion-allof/menu.published":       of[recursionallof.MenuPublished](recursionallof.FactMenuPublished),
	"recursion-allof/team.reorganized":     of[recursionallof.TeamReorganized](recursionallof.FactTeamReorganized),
	"ref-by-path/acme.order.created":       of[refbypath.OrderCreated](refbypath.FactOrderCreated),
	"refs/order.placed":                    of[refs.OrderPlaced](refs.FactOrderPlaced),
	"refs/order.refunded":                  of[refs.OrderRefunded](refs.FactOrderRefunded),
	"rule-names/col.changed":               of[rulenames.ColChanged](rulenames.FactColChanged),
	"rule-names/ay.seen":                   of[rulenames.Ay](rulenames.FactAy),
	"rule-names/ay.bee.seen":               of[rulenames.AyBee](rulenames.FactAyBee),
	"rule-names/wide.row.loaded":           of[rulenames.WideRow](rulenames.FactWideRow),
	"unions/payment.made":                  of[unions.PaymentMade](unions.FactPaymentMade),
	"vendor-shapes/proto.instance.changed": of[vendorshapes.InstanceChanged](vendorshapes.FactInstanceChanged),
	"vendor-shapes/config.document.saved":  of[vendorshapes.DocumentSaved](vendorshapes.FactDocumentSaved),
	"wiring/stock.item.counted":            of[wiring.ItemCounted](wiring.FactItemCounted),
	"wild/optional.checked":                of[wild.OptionalChecked](wild.FactOptionalChecked),
	"wild/null.kept":                       of[wild.NullKept](wild.FactNullKept),
	"wild/anyof.annotated":                 of[wild.AnyofAnnotated](wild.FactAnyofAnnotated),
	"wild/oneof.negated":                   of[wild.OneofNegated](wild.FactOneofNegated),
	"wild/untyped.keywords":                of[wild.UntypedKeywords](wild.FactUntypedKeywords),
	"wild/required.sets":                   of[wild.RequiredSets](wild.FactRequiredSets),
	"wild/pattern.members":                 of[wild.PatternMembers](wild.FactPatternMembers),
	"wild/untyped.root":                    of[wild.UntypedRoot](wild.FactUntypedRoot),
}

// TestRoundTrip decodes every sample into its generated type, encodes it
// again and expects the same JSON (numbers compared by value, key order
// ignored), still valid against the schema. Samples named invalid-*.json
// must be rejected by the fact's validation instead.
func TestRoundTrip(t *testing.T) {
	samples, err := filepath.Glob("*/samples/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) == 0 {
		t.Fatal("no samples found")
	}
	covered := map[string]bool{}
	for _, path := range samples {
		parts := strings.Split(filepath.ToSlash(path), "/")
		key := parts[0] + "/" + parts[2]
		f, ok := facts[key]
		if !ok {
			t.Errorf("%s: no generated type registered for %s in facts", path, key)
			continue
		}
		covered[key] = true
		t.Run(strings.TrimSuffix(strings.Join([]string{parts[0], parts[2], parts[3]}, "/"), ".json"), func(t *testing.T) {
			sample, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(parts[3], "invalid-") {
				if err := f.desc.Validate(sample); err == nil {
					t.Fatalf("%s validated, but it is meant to break the schema", path)
				}
				return
			}
			roundTrip(t, f, sample)
		})
	}
	for key := range facts {
		if !covered[key] {
			t.Errorf("%s has no sample", key)
		}
	}
}

func roundTrip(t *testing.T, f fact, sample []byte) {
	t.Helper()
	if err := f.desc.Validate(sample); err != nil {
		t.Fatalf("sample is not valid against its own schema: %v", err)
	}
	v := f.new()
	if err := json.Unmarshal(sample, v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	encoded, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if diff := cmp.Diff(normalize(t, sample), normalize(t, encoded)); diff != "" {
		t.Errorf("JSON changed in the round trip (-sample +encoded):\n%s\nencoded: %s", diff, encoded)
	}
	if err := f.desc.Validate(encoded); err != nil {
		t.Errorf("encoded value fails its schema: %v", err)
	}
	if err := v.(interface{ Validate() error }).Validate(); err != nil {
		t.Errorf("Validate method: %v", err)
	}
	if f.desc.OrderingKey != "" {
		orderingKeyAgrees(t, f.desc, v, sample)
	}
}

// orderingKeyAgrees checks that a fact's KeyOf reads from the Go value the
// key the publisher would otherwise read from the JSON, spelled the same,
// and leaves raw JSON payloads to the bytes.
func orderingKeyAgrees(t *testing.T, f runtime.Fact, value any, sample []byte) {
	t.Helper()
	if f.KeyOf == nil {
		t.Fatalf("fact with ordering key %s has no KeyOf", f.OrderingKey)
	}
	want, err := runtime.OrderingKeyOf(sample, f.OrderingKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := f.KeyOf(value); !ok || got != want {
		t.Errorf("KeyOf(value) = %q, %v; the JSON's key is %q", got, ok, want)
	}
	if got, ok := f.KeyOf(json.RawMessage(sample)); ok {
		t.Errorf("KeyOf(raw JSON) = %q, true; raw payloads are read from their bytes", got)
	}
}

// normalize decodes JSON with every number as an exact rational, so that
// 2.50 and 2.5, or 1e3 and 1000, compare equal.
func normalize(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("normalize %s: %v", data, err)
	}
	return exact(v)
}

func exact(v any) any {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(x.String())
		if !ok {
			return x.String()
		}
		return r.RatString()
	case map[string]any:
		for k, e := range x {
			x[k] = exact(e)
		}
	case []any:
		for i, e := range x {
			x[i] = exact(e)
		}
	}
	return v
}

// TestOptionalNullable: a property that is both optional and nullable
// keeps "absent" and "null" apart (schemaset.Nullable), so an explicit
// null survives decoding and encoding, and an absent one stays absent.
func TestOptionalNullable(t *testing.T) {
	var v nullable.ProfileChanged
	in := []byte(`{"nickname":null,"age":null,"score":null,"verified":null,"address":null,"tags":null,"scores":[],"middle_name":null}`)
	if err := json.Unmarshal(in, &v); err != nil {
		t.Fatal(err)
	}
	if !v.MiddleName.Present || v.MiddleName.Valid {
		t.Fatalf("MiddleName = %+v, want present and null", v.MiddleName)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"middle_name":null`)) {
		t.Errorf("encoded %s: the explicit null of middle_name is lost", out)
	}
	if !bytes.Contains(out, []byte(`"nickname":null`)) {
		t.Errorf("encoded %s: a required nullable nil should be null", out)
	}
	if err := nullable.FactProfileChanged.Validate(out); err != nil {
		t.Errorf("encoded value fails its schema: %v", err)
	}
	v = nullable.ProfileChanged{}
	if err := json.Unmarshal([]byte(`{"nickname":"n","age":1,"score":1,"verified":true,"address":null,"tags":null,"scores":[]}`), &v); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(v); bytes.Contains(out, []byte("middle_name")) {
		t.Errorf("encoded %s: an absent middle_name came back", out)
	}
}

// TestUnionBranches checks that decoding picks branches by schema, not by
// which struct happens to accept the JSON, and that a oneOf with two
// branches set does not validate. The unions are inline: their parent's
// decoding calls theirs, as codec.Unmarshal does here.
func TestUnionBranches(t *testing.T) {
	var m unions.PaymentMadeMethod
	if err := codec.Unmarshal([]byte(`{"type":"transfer","iban":"DE00"}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.Card != nil || m.Transfer == nil || m.Transfer.Iban != "DE00" {
		t.Fatalf("decoded %+v, want only Transfer", m)
	}
	if err := codec.Unmarshal([]byte(`{"type":"cash"}`), &m); err == nil {
		t.Fatal("a value matching no branch decoded without error")
	}
	both := unions.PaymentMadeMethod{Card: &unions.Card{Type: unions.CardTypeCard, Last4: "1"}, Transfer: &unions.Transfer{Type: unions.TransferTypeTransfer}}
	if err := both.Validate(); err == nil {
		t.Fatal("a oneOf with two branches set validated without error")
	}

	var c unions.PaymentMadeContact
	if err := codec.Unmarshal([]byte(`{"email":"a@example.com","phone":"+49"}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.Option1 == nil || c.Option2 == nil {
		t.Fatalf("anyOf decoded %+v, want both branches", c)
	}
}

// TestAdditionalProperties checks that undeclared properties survive in
// AdditionalProperties and cannot shadow a declared one. The object is
// inline: its parent's decoding reaches it, as codec.Unmarshal does
// here.
func TestAdditionalProperties(t *testing.T) {
	var f additional.ConfigChangedFeatures
	if err := codec.Unmarshal([]byte(`{"dark_mode":true,"beta":false}`), &f); err != nil {
		t.Fatal(err)
	}
	if !f.DarkMode || len(f.AdditionalProperties) != 1 || f.AdditionalProperties["beta"] {
		t.Fatalf("decoded %+v", f)
	}
	f.AdditionalProperties["dark_mode"] = false
	if err := f.Validate(); err == nil {
		t.Fatal("an additional property named like a declared one validated without error")
	}
}
