package outbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agritrade/api/platform/config"
)

// SMTPChannel mails each notification to the addresses of its channel: the
// route whose event-type prefix matches longest, else notify.smtp.to. The
// recipients of an event are user ids, not addresses: the mail goes to
// configured mailboxes (the experts' list, an operations inbox), and the user
// ids travel in the text and in the webhook for a notifier that knows users.
type SMTPChannel struct {
	addr     string
	host     string
	username string
	password string
	from     *mail.Address
	to       []string
	routes   []route
	timeout  time.Duration
	now      func() time.Time
}

type route struct {
	prefix string
	to     []string
}

// NewSMTP makes the SMTP channel from notify.smtp.*; addresses must parse.
func NewSMTP(c config.SMTP) (*SMTPChannel, error) {
	if c.Port <= 0 {
		c.Port = 25
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	from, err := mail.ParseAddress(c.From)
	if err != nil {
		return nil, fmt.Errorf("notify.smtp.from: %w", err)
	}
	to, err := parseAddresses(c.To)
	if err != nil {
		return nil, fmt.Errorf("notify.smtp.to: %w", err)
	}
	s := &SMTPChannel{
		addr: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), host: c.Host, username: c.Username, password: c.Password,
		from: from, to: to, timeout: c.Timeout, now: time.Now,
	}
	for prefix, list := range c.Routes {
		addrs, err := parseAddresses(list)
		if err != nil {
			return nil, fmt.Errorf("notify.smtp.routes.%s: %w", prefix, err)
		}
		s.routes = append(s.routes, route{prefix: prefix, to: addrs})
	}
	// Longest prefix first, so the first match is the most specific route.
	sort.Slice(s.routes, func(i, j int) bool { return len(s.routes[i].prefix) > len(s.routes[j].prefix) })
	if len(s.to) == 0 && len(s.routes) == 0 {
		return nil, errors.New("notify.smtp.to or notify.smtp.routes is required when notify.smtp.host is set")
	}
	return s, nil
}

func parseAddresses(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	parsed, err := mail.ParseAddressList(list)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(parsed))
	for i, a := range parsed {
		out[i] = a.Address
	}
	return out, nil
}

// Name is "smtp".
func (s *SMTPChannel) Name() string { return "smtp" }

// To answers the addresses that receive events of a type.
func (s *SMTPChannel) To(eventType string) []string {
	for _, r := range s.routes {
		if strings.HasPrefix(eventType, r.prefix) {
			return r.to
		}
	}
	return s.to
}

// Deliver sends one mail. STARTTLS is used whenever the server offers it, and
// credentials are only sent over TLS (net/smtp refuses otherwise, except to
// localhost).
func (s *SMTPChannel) Deliver(ctx context.Context, n Notification) error {
	to := s.To(n.Type)
	if len(to) == 0 {
		return nil // no mailbox for this kind of event
	}
	msg := s.message(n, to)
	d := net.Dialer{Timeout: s.timeout}
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("smtp connect: %w", err)
	}
	defer conn.Close()
	// One deadline for the whole conversation: a stuck server cannot hold the claim.
	if err := conn.SetDeadline(s.now().Add(s.timeout)); err != nil {
		return err
	}
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		return fmt.Errorf("smtp greeting: %w", err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}); err != nil {
			return fmt.Errorf("smtp starttls: %w", err)
		}
	}
	if s.username != "" {
		if err := c.Auth(smtp.PlainAuth("", s.username, s.password, s.host)); err != nil {
			return fmt.Errorf("smtp auth: %w", err)
		}
	}
	if err := c.Mail(s.from.Address); err != nil {
		return fmt.Errorf("smtp MAIL FROM: %w", err)
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return fmt.Errorf("smtp RCPT TO: %w", err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	return c.Quit()
}

// message renders the mail: UTF-8 text in quoted-printable, the subject
// RFC 2047-encoded, the event id as Message-ID so that mail clients and
// archives see retries as the same message.
func (s *SMTPChannel) message(n Notification, to []string) []byte {
	domain := "agritrade.local"
	if i := strings.LastIndexByte(s.from.Address, '@'); i >= 0 {
		domain = s.from.Address[i+1:]
	}
	subject := n.Subject
	if subject == "" {
		subject = "AgriTrade: " + n.Type
	}
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, oneLine(v)) }
	header("From", s.from.String())
	header("To", strings.Join(to, ", "))
	header("Subject", mime.QEncoding.Encode("utf-8", oneLine(subject)))
	header("Date", s.now().UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+n.ID+"@"+domain+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	header(HeaderEventID, n.ID)
	header(HeaderEventType, n.Type)
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	text := n.Body
	if len(n.Recipients) > 0 {
		text += "\n\nRecipients (user ids): " + strings.Join(n.Recipients, ", ")
	}
	text += "\n\n-- \nAgriTrade notification " + n.Type + " " + n.ID + "\n"
	_, _ = qp.Write([]byte(strings.ReplaceAll(text, "\n", "\r\n")))
	_ = qp.Close()
	return b.Bytes()
}

// oneLine keeps header values on one line (no header injection).
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
