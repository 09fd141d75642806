package streamproto

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"time"
	"unicode/utf8"

	samqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
)

// AMQP 1.0 type codes (the specification's part 1, "Types"), as far as a
// warren fact needs them.
const (
	codeNull      = 0x40
	codeTrue      = 0x41
	codeFalse     = 0x42
	codeUbyte     = 0x50
	codeUshort    = 0x60
	codeUint      = 0x70
	codeSmallUint = 0x52
	codeUint0     = 0x43
	codeUlong     = 0x80
	codeSmallUlng = 0x53
	codeUlong0    = 0x44
	codeByte      = 0x51
	codeShort     = 0x61
	codeInt       = 0x71
	codeSmallInt  = 0x54
	codeLong      = 0x81
	codeSmallLong = 0x55
	codeFloat     = 0x72
	codeDouble    = 0x82
	codeTimestamp = 0x83
	codeVbin8     = 0xa0
	codeVbin32    = 0xb0
	codeStr8      = 0xa1
	codeStr32     = 0xb1
	codeSym8      = 0xa3
	codeSym32     = 0xb3
	codeList32    = 0xd0
	codeMap32     = 0xd1

	// The message's sections, each a described type whose descriptor is
	// this code as a small ulong.
	sectionMessageAnnotations    = 0x72
	sectionProperties            = 0x73
	sectionApplicationProperties = 0x74
	sectionData                  = 0x75

	// propertiesFields is how many of the properties' fields the stream
	// client writes: up to group-sequence, the twelfth.
	propertiesFields = 12
)

// encodedMessage is an Outgoing encoded once, by hand, as the AMQP 1.0
// message the stream keeps: message annotations (exchange, routing key,
// type, delivery mode), properties (message id, content type, creation
// time), application properties (the headers, and the type for RabbitMQ
// before 3.13) and one data section (the body). There is no header
// section: RabbitMQ 3.10 closes the channel of an AMQP 0-9-1 reader of a
// stream message with one (INTERNAL_ERROR), and every release reads the
// delivery mode from the annotation.
// The bytes are what the stream client's own encoder writes for the same
// message, section for section and type for type, so that a reader sees
// no difference. The client's encoder takes every value as an interface
// and writes into a buffer that grows from empty, several copies of a 1
// KiB body: an eighth of a direct publish's client CPU, where this is one
// allocation and one copy of the body.
//
// It is the stream client's message.StreamMessage: the producer calls
// MarshalBinary and the publishing id methods; the getters answer from
// the Outgoing for anything else that asks.
type encodedMessage struct {
	o     Outgoing
	raw   []byte
	id    int64
	hasID bool
}

// encode encodes o, or fails naming the header whose value no AMQP 1.0
// application property can hold, or whose key or value is not UTF-8.
func encode(o Outgoing) (*encodedMessage, error) {
	for _, f := range [...]struct{ name, s string }{{"exchange", o.Exchange}, {"routing key", o.RoutingKey}, {"message id", o.MessageID}, {"type", o.Type}, {"content type", o.ContentType}} {
		if !utf8.ValidString(f.s) {
			return nil, fmt.Errorf("the %s %q is not UTF-8", f.name, f.s)
		}
	}
	b := make([]byte, 0, encodedSize(o))
	b = appendAnnotations(b, o)
	b = appendProperties(b, o)
	if len(o.Headers) > 0 || o.TypeAsProperty && o.Type != "" {
		var err error
		if b, err = appendApplicationProperties(b, o); err != nil {
			return nil, err
		}
	}
	b = append(b, 0, codeSmallUlng, sectionData)
	b = appendBinary(b, o.Body)
	return &encodedMessage{o: o, raw: b}, nil
}

// encodedSize is at least the encoding's length (each string, symbol and
// value counted at its widest form), so that the message is one
// allocation.
func encodedSize(o Outgoing) int {
	const section = 3 + 9 // a descriptor, and a map32's or list32's header
	str := func(s string) int { return 5 + len(s) }
	n := section + str("x-exchange") + str(o.Exchange) + str("x-routing-key") + str(o.RoutingKey) +
		2*(str("x-basic-type")+str(o.Type)) + str("x-basic-delivery-mode") + 2
	n += section + str(o.MessageID) + str(o.ContentType) + 9 + propertiesFields
	if len(o.Headers) > 0 || o.TypeAsProperty {
		n += section
		for k, v := range o.Headers {
			n += str(k) + 9
			switch v := v.(type) {
			case string:
				n += len(v)
			case []byte:
				n += len(v)
			}
		}
	}
	return n + 3 + 5 + len(o.Body)
}

func appendAnnotations(b []byte, o Outgoing) []byte {
	b = append(b, 0, codeSmallUlng, sectionMessageAnnotations)
	start := len(b)
	b = append(b, codeMap32, 0, 0, 0, 0, 0, 0, 0, 0)
	count := uint32(4)
	b = appendSymbol(b, "x-exchange")
	b = appendString(b, o.Exchange)
	b = appendSymbol(b, "x-routing-key")
	b = appendString(b, o.RoutingKey)
	if o.Type != "" {
		b = appendSymbol(b, "x-basic-type")
		b = appendString(b, o.Type)
		count += 2
	}
	if o.DeliveryMode != 0 {
		b = appendSymbol(b, "x-basic-delivery-mode")
		b = append(b, codeUbyte, o.DeliveryMode)
		count += 2
	}
	return endCompound(b, start, count)
}

// appendProperties writes the properties section as the stream client
// does: a list of the fields up to group-sequence (which it always
// writes, as 0), the unset ones null, the message id always, as a string.
func appendProperties(b []byte, o Outgoing) []byte {
	b = append(b, 0, codeSmallUlng, sectionProperties)
	start := len(b)
	b = append(b, codeList32, 0, 0, 0, 0, 0, 0, 0, 0)
	b = appendString(b, o.MessageID)                                // message-id
	b = append(b, codeNull, codeNull, codeNull, codeNull, codeNull) // user-id, to, subject, reply-to, correlation-id
	if o.ContentType != "" {
		b = appendSymbol(b, o.ContentType)
	} else {
		b = append(b, codeNull)
	}
	b = append(b, codeNull, codeNull) // content-encoding, absolute-expiry-time
	if !o.Timestamp.IsZero() {
		b = appendTimestamp(b, o.Timestamp)
	} else {
		b = append(b, codeNull)
	}
	b = append(b, codeNull, codeUint0) // group-id, group-sequence
	return endCompound(b, start, propertiesFields)
}

func appendApplicationProperties(b []byte, o Outgoing) ([]byte, error) {
	b = append(b, 0, codeSmallUlng, sectionApplicationProperties)
	start := len(b)
	b = append(b, codeMap32, 0, 0, 0, 0, 0, 0, 0, 0)
	count := uint32(2 * len(o.Headers))
	if o.TypeAsProperty && o.Type != "" {
		b = appendString(b, "x-basic-type")
		b = appendString(b, o.Type)
		count += 2
	}
	for k, v := range o.Headers {
		if !utf8.ValidString(k) {
			return nil, fmt.Errorf("header %q: its name is not UTF-8", k)
		}
		b = appendString(b, k)
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
	}
	return endCompound(b, start, count), nil
}

// endCompound fills in the size and count of the map32 or list32 whose
// type code is at b[start]: the size counts the bytes after itself.
func endCompound(b []byte, start int, count uint32) []byte {
	binary.BigEndian.PutUint32(b[start+1:], uint32(len(b)-start-5))
	binary.BigEndian.PutUint32(b[start+5:], count)
	return b
}

// appendValue encodes one header value with the type the stream client's
// encoder gives the same Go type.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, codeNull), nil
	case bool:
		if v {
			return append(b, codeTrue), nil
		}
		return append(b, codeFalse), nil
	case string:
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("its value is not UTF-8")
		}
		return appendString(b, v), nil
	case []byte:
		return appendBinary(b, v), nil
	case time.Time:
		return appendTimestamp(b, v), nil
	case int:
		return appendLong(b, int64(v)), nil
	case int8:
		return append(b, codeByte, byte(v)), nil
	case int16:
		return binary.BigEndian.AppendUint16(append(b, codeShort), uint16(v)), nil
	case int32:
		if v >= -128 && v < 128 {
			return append(b, codeSmallInt, byte(v)), nil
		}
		return binary.BigEndian.AppendUint32(append(b, codeInt), uint32(v)), nil
	case int64:
		return appendLong(b, v), nil
	case uint8:
		return append(b, codeUbyte, v), nil
	case uint16:
		return binary.BigEndian.AppendUint16(append(b, codeUshort), v), nil
	case uint32:
		switch {
		case v == 0:
			return append(b, codeUint0), nil
		case v < 256:
			return append(b, codeSmallUint, byte(v)), nil
		}
		return binary.BigEndian.AppendUint32(append(b, codeUint), v), nil
	case uint64:
		switch {
		case v == 0:
			return append(b, codeUlong0), nil
		case v < 256:
			return append(b, codeSmallUlng, byte(v)), nil
		}
		return binary.BigEndian.AppendUint64(append(b, codeUlong), v), nil
	case float32:
		return binary.BigEndian.AppendUint32(append(b, codeFloat), math.Float32bits(v)), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(b, codeDouble), math.Float64bits(v)), nil
	}
	return nil, fmt.Errorf("a %T cannot be an AMQP 1.0 application property (strings, numbers, booleans, bytes and times can)", v)
}

func appendLong(b []byte, v int64) []byte {
	if v >= -128 && v < 128 {
		return append(b, codeSmallLong, byte(v))
	}
	return binary.BigEndian.AppendUint64(append(b, codeLong), uint64(v))
}

// appendString writes s, which the caller has checked is UTF-8, as an
// AMQP string.
func appendString(b []byte, s string) []byte {
	if len(s) < 256 {
		return append(append(b, codeStr8, byte(len(s))), s...)
	}
	return append(binary.BigEndian.AppendUint32(append(b, codeStr32), uint32(len(s))), s...)
}

func appendSymbol(b []byte, s string) []byte {
	if len(s) < 256 {
		return append(append(b, codeSym8, byte(len(s))), s...)
	}
	return append(binary.BigEndian.AppendUint32(append(b, codeSym32), uint32(len(s))), s...)
}

func appendBinary(b, v []byte) []byte {
	if len(v) < 256 {
		return append(append(b, codeVbin8, byte(len(v))), v...)
	}
	return append(binary.BigEndian.AppendUint32(append(b, codeVbin32), uint32(len(v))), v...)
}

func appendTimestamp(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(append(b, codeTimestamp), uint64(t.UnixMilli()))
}

// MarshalBinary returns the message's encoding, made once by encode.
func (m *encodedMessage) MarshalBinary() ([]byte, error) { return m.raw, nil }

// UnmarshalBinary reads an AMQP 1.0 message with the stream client's own
// decoder into the message's fields.
func (m *encodedMessage) UnmarshalBinary(data []byte) error {
	var d samqp.Message
	if err := d.UnmarshalBinary(data); err != nil {
		return err
	}
	var o Outgoing
	if len(d.Data) > 0 {
		o.Body = d.Data[0]
	}
	if p := d.Properties; p != nil {
		o.MessageID, _ = p.MessageID.(string)
		o.ContentType, o.Timestamp = p.ContentType, p.CreationTime
	}
	o.Exchange, _ = d.Annotations["x-exchange"].(string)
	o.RoutingKey, _ = d.Annotations["x-routing-key"].(string)
	o.Type, _ = d.Annotations["x-basic-type"].(string)
	o.DeliveryMode, _ = d.Annotations["x-basic-delivery-mode"].(uint8)
	o.Headers = d.ApplicationProperties
	if t, ok := o.Headers["x-basic-type"].(string); ok {
		o.Type, o.TypeAsProperty = t, true
		delete(o.Headers, "x-basic-type")
	}
	m.o, m.raw = o, data
	return nil
}

func (m *encodedMessage) SetPublishingId(id int64) { m.id, m.hasID = id, true }
func (m *encodedMessage) GetPublishingId() int64   { return m.id }
func (m *encodedMessage) HasPublishingId() bool    { return m.hasID }
func (m *encodedMessage) GetData() [][]byte        { return [][]byte{m.o.Body} }

func (m *encodedMessage) GetMessageProperties() *samqp.MessageProperties {
	return &samqp.MessageProperties{MessageID: m.o.MessageID, ContentType: m.o.ContentType, CreationTime: m.o.Timestamp}
}

func (m *encodedMessage) GetMessageAnnotations() samqp.Annotations {
	a := samqp.Annotations{"x-exchange": m.o.Exchange, "x-routing-key": m.o.RoutingKey}
	if m.o.Type != "" {
		a["x-basic-type"] = m.o.Type
	}
	if m.o.DeliveryMode != 0 {
		a["x-basic-delivery-mode"] = m.o.DeliveryMode
	}
	return a
}

func (m *encodedMessage) GetApplicationProperties() map[string]any {
	if !m.o.TypeAsProperty || m.o.Type == "" {
		return m.o.Headers
	}
	h := maps.Clone(m.o.Headers)
	if h == nil {
		h = map[string]any{}
	}
	h["x-basic-type"] = m.o.Type
	return h
}
func (m *encodedMessage) GetMessageHeader() *samqp.MessageHeader { return nil }
func (m *encodedMessage) GetAMQPValue() any                      { return nil }
