package outbox

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// LogChannel writes every notification to the log. It is always on, so that a
// server without webhook or SMTP still shows what it would have sent.
type LogChannel struct {
	log logrus.FieldLogger
}

// NewLogChannel makes the log channel.
func NewLogChannel(log logrus.FieldLogger) *LogChannel { return &LogChannel{log: log} }

// Name is "log".
func (l *LogChannel) Name() string { return "log" }

// Deliver logs the notification: the summary at info, the body (user text) at debug.
func (l *LogChannel) Deliver(ctx context.Context, n Notification) error {
	e := withContext(l.log, ctx).WithFields(logrus.Fields{"event_id": n.ID, "event_type": n.Type, "recipients": strings.Join(n.Recipients, ","), "subject": n.Subject})
	e.Info("notification")
	e.WithField("body", n.Body).Debug("notification body")
	return nil
}

// Webhook headers: the event id is the receiver's idempotency key (the same on
// every attempt); the signature covers the timestamp and the body.
const (
	HeaderEventID   = "X-AgriTrade-Event-ID"
	HeaderEventType = "X-AgriTrade-Event-Type"
	HeaderAttempt   = "X-AgriTrade-Attempt"
	HeaderTimestamp = "X-AgriTrade-Timestamp"
	HeaderSignature = "X-AgriTrade-Signature"
)

// WebhookChannel POSTs each notification as JSON to one URL, signed with
// HMAC-SHA256 over "<timestamp>.<body>" (see Sign and Verify).
type WebhookChannel struct {
	url    string
	secret []byte
	client *http.Client
	now    func() time.Time
}

// NewWebhook makes the webhook channel. The URL must be absolute http(s) and the
// secret non-empty: an unsigned webhook would let anyone forge notifications.
func NewWebhook(rawURL, secret string, timeout time.Duration) (*WebhookChannel, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("notify.webhook.url must be an absolute http(s) URL")
	}
	if secret == "" {
		return nil, errors.New("notify.webhook.secret is required when notify.webhook.url is set")
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &WebhookChannel{
		url: rawURL, secret: []byte(secret), now: time.Now,
		client: &http.Client{
			Timeout: timeout,
			// A redirect is a failure: the signed body goes to the configured URL only.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Name is "webhook".
func (w *WebhookChannel) Name() string { return "webhook" }

// Deliver POSTs the notification; any answer but 2xx is a failure.
func (w *WebhookChannel) Deliver(ctx context.Context, n Notification) error {
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(w.now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return errors.New("cannot build the webhook request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "AgriTrade-Outbox/1")
	req.Header.Set(HeaderEventID, n.ID)
	req.Header.Set(HeaderEventType, n.Type)
	req.Header.Set(HeaderAttempt, strconv.Itoa(n.Attempt))
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(w.secret, ts, body))
	res, err := w.client.Do(req)
	if err != nil {
		// The URL may carry credentials: report the cause without it.
		var ue *url.Error
		if errors.As(err, &ue) {
			return fmt.Errorf("webhook request failed: %w", ue.Err)
		}
		return errors.New("webhook request failed")
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("webhook receiver answered %d", res.StatusCode)
	}
	return nil
}

// Sign answers the X-AgriTrade-Signature value of a body sent at the Unix
// timestamp ts: "sha256=" and the hex HMAC-SHA256 of ts + "." + body.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify is what a receiver runs: the signature must match and the timestamp
// be within tolerance of now (replayed old requests fail). Receivers should
// also drop event ids they have already processed (delivery is at least once).
func Verify(secret []byte, ts, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("bad timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("timestamp outside the tolerance")
	}
	if !hmac.Equal([]byte(Sign(secret, ts, body)), []byte(signature)) {
		return errors.New("signature mismatch")
	}
	return nil
}
