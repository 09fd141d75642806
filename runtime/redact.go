package runtime

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/internal/transport"
)

// redactURL returns raw with its password replaced by "xxxxx", by the URL's
// structure, so that URLs net/url refuses are redacted too.
func redactURL(raw string) string { return secret.URL(raw) }

// redact hides the password of every URL in err's text while keeping the
// chain intact for errors.Is and errors.As. It is applied to every error
// the runtime returns or logs that a dependency built, since such text may
// quote a URL.
func (c *Conn) redact(err error) error { return secret.Error(err) }

// OpenChannel opens a channel on the live connection, waiting for a
// reconnect up to ctx's deadline. The caller owns the channel and closes
// it. Operations tools (package poison, warren status) work through it, so
// a service and the CLI reach the broker the same way.
func (c *Conn) OpenChannel(ctx context.Context) (*amqp.Channel, error) {
	ch, url, err := c.openChannel(ctx)
	if err != nil {
		return nil, err
	}
	amqpCh, ok := ch.(*amqp.Channel)
	if !ok {
		_ = ch.Close()
		return nil, fmt.Errorf("open channel on %s: the operations tools need a connection to RabbitMQ, and this one is in-process", url)
	}
	return amqpCh, nil
}

// openChannel opens a channel on whatever transport the live connection
// runs on, for the runtime's own inspections.
func (c *Conn) openChannel(ctx context.Context) (transport.Channel, string, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, "", err
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return nil, s.url, c.redact(fmt.Errorf("open channel on %s: %w", s.url, err))
	}
	return ch, s.url, nil
}

// URL returns the address of the live connection with its password
// redacted, or "" while the Conn is reconnecting.
func (c *Conn) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return ""
	}
	return c.sess.url
}
