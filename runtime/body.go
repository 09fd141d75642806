package runtime

import (
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Body sizes. RabbitMQ's own default max_message_size is 128 MiB; a
// consumer never accepts more than the broker would by default.
const (
	// DefaultMaxBodySize is the largest body a consumer decodes unless
	// [WithMaxBodySize] says otherwise.
	DefaultMaxBodySize = 16 << 20
	// MaxBodySizeCeiling is the largest value [WithMaxBodySize] accepts:
	// RabbitMQ's default max_message_size.
	MaxBodySizeCeiling = 128 << 20
)

// WithMaxBodySize sets the largest body the consumer decodes, in bytes
// (default [DefaultMaxBodySize], at most [MaxBodySizeCeiling]). A larger
// body is poisoned on its first attempt without being decoded, so a huge
// message costs no decoding memory and does not go round the retry ladder.
func WithMaxBodySize(n int) ConsumerOption {
	return func(o *consumerOptions) { o.maxBodySize = n; o.given |= optMaxBodySize }
}

// checkBody rejects what a consumer must not decode, before any decoding:
// a body over the size limit, a content_encoding the runtime does not
// decode, a content_type that is present and not JSON, and a body that is
// not valid UTF-8 (encoding/json would quietly turn bad bytes into U+FFFD
// and the handler would act on a corrupted fact). Every such error is
// permanent: the same bytes fail the same way on every attempt.
func checkBody(d amqp.Delivery, maxSize int) error {
	if len(d.Body) > maxSize {
		return Permanent(fmt.Errorf("body of %d bytes is over the consumer's limit of %d bytes (WithMaxBodySize); it was not decoded", len(d.Body), maxSize))
	}
	if !identityEncoding(d.ContentEncoding) {
		return Permanent(fmt.Errorf("content_encoding %q: the consumer decodes no content encoding; publish the JSON envelope as is, without content_encoding", d.ContentEncoding))
	}
	if err := checkContentType(d.ContentType); err != nil {
		return Permanent(err)
	}
	if !utf8.Valid(d.Body) {
		return Permanent(fmt.Errorf("body is not valid UTF-8: invalid byte 0x%02x at offset %d; JSON messages must be UTF-8", d.Body[invalidUTF8At(d.Body)], invalidUTF8At(d.Body)))
	}
	return nil
}

// identityEncoding reports whether a content_encoding leaves the body as it
// is. Some clients (Spring AMQP among them) put the character set there.
func identityEncoding(enc string) bool {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity", "utf-8", "utf8":
		return true
	}
	return false
}

// checkContentType accepts an absent content_type (many clients omit it),
// application/json and any application/*+json, with no charset or UTF-8.
func checkContentType(ct string) error {
	// What every warren publisher sends, settled without parsing (and
	// allocating) on every delivery.
	if ct == "application/json" || strings.TrimSpace(ct) == "" {
		return nil
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("content_type %q is not a media type: %w", ct, err)
	}
	if media != "application/json" && !(strings.HasPrefix(media, "application/") && strings.HasSuffix(media, "+json")) {
		return fmt.Errorf("content_type %q: expected application/json (or none); the body is a JSON envelope", ct)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return fmt.Errorf("content_type %q: charset %q, expected utf-8", ct, cs)
	}
	return nil
}

// invalidUTF8At returns the offset of the first byte of b that is not part
// of a valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
