package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/testkit"
)

// ack is one write a replica acknowledged with 2xx.
type ack struct {
	kind, via string
	id        string // listing, load, file or conversation id
	text      string // the message text (messages)
	sum       [32]byte
}

// TestAcknowledgedWritesSurviveKill runs two replicas on one database while
// clients write through both (listings, loads, conversation messages, file
// uploads), SIGKILLs one of them in the middle of the stream, and then checks
// through the survivor that every write either replica acknowledged is there
// (files byte for byte), and that the survivor kept serving writes.
func TestAcknowledgedWritesSurviveKill(t *testing.T) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			_, env := startEnv(t, d)
			env = append(env, "AGRITRADE_AUTH_SECRET="+faultSecret, "AGRITRADE_RATELIMIT_PER_MINUTE=0")
			if d == testkit.Postgres {
				env = append(env, "AGRITRADE_BUS_BACKEND=postgres")
			}
			a, b := spawn(t, "replica a", env, "serve"), spawn(t, "replica b", env, "serve")
			for _, p := range []*child{a, b} {
				if _, err := p.ready(2 * time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			farmer, buyer := faultToken(t, demoFarmer), faultToken(t, demoBuyer)
			client := &http.Client{Timeout: 20 * time.Second}
			ctx := context.Background()

			// One conversation per writer, created before the stream.
			const writers = 6
			convs := make([]string, writers)
			for w := range convs {
				status, _, body, err := do(ctx, client, http.MethodPost, b.base+"/system/v1/conversations", buyer, "application/json",
					jsonBody(t, map[string]any{"to": demoFarmer.UserID, "message": "opening", "title": fmt.Sprintf("writer %d", w)}))
				var conv struct {
					ConversationID string `json:"conversationId"`
				}
				if err != nil || status != 200 || json.Unmarshal(body, &conv) != nil {
					t.Fatalf("conversation: %d %s %v", status, body, err)
				}
				convs[w] = conv.ConversationID
			}

			var (
				mu       sync.Mutex
				acks     []ack
				failures = map[string]int{}
				badCodes = map[string]int{}
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						via := []*child{a, b}[(w+n)%2]
						seq := w*100000 + n
						var (
							path, ctype, token = "", "application/json", farmer
							body               []byte
							got                = ack{via: via.name}
						)
						switch n % 4 {
						case 0:
							kind, bb := listingBody(t, seq, fmt.Sprintf("Durability listing %d", seq))
							got.kind, path, body = "listing", "/livestock/v1/listings/"+kind, bb
						case 1:
							got.kind, path, body = "load", "/logistics/v1/loads", jsonBody(t, loadBodyMap(fmt.Sprintf("DUR-%d", seq), 5))
						case 2:
							got.kind, got.id, got.text = "message", convs[w], fmt.Sprintf("durability message %d", seq)
							path, token = "/system/v1/conversations/"+convs[w]+"/messages", buyer
							body = jsonBody(t, map[string]any{"to": demoFarmer.UserID, "message": got.text})
						case 3:
							var png []byte
							body, ctype, png = upload(t, demoFarmer, seq)
							got.kind, path, got.sum = "file", "/system/v1/files", sha256.Sum256(png)
						}
						status, _, resp, err := do(ctx, client, http.MethodPost, via.base+path, token, ctype, body)
						mu.Lock()
						switch {
						case err != nil:
							failures[via.name]++ // no answer: not acknowledged
						case status != http.StatusOK:
							badCodes[fmt.Sprintf("%s %s %d", via.name, got.kind, status)]++
						default:
							if got.kind != "message" {
								var created struct {
									ID string `json:"id"`
								}
								if json.Unmarshal(resp, &created) != nil || created.ID == "" {
									badCodes[fmt.Sprintf("%s %s answer without id", via.name, got.kind)]++
									break
								}
								got.id = created.ID
							}
							acks = append(acks, got)
						}
						mu.Unlock()
					}
				}()
			}
			time.Sleep(1500 * time.Millisecond)
			a.kill()
			mu.Lock()
			atKill := len(acks)
			mu.Unlock()
			time.Sleep(1500 * time.Millisecond)
			close(stop)
			wg.Wait()
			if len(badCodes) > 0 {
				t.Fatalf("answers other than 200: %v", badCodes)
			}
			afterKill := 0
			for _, x := range acks[atKill:] {
				if x.via == b.name {
					afterKill++
				}
			}
			if afterKill == 0 {
				t.Fatal("the survivor acknowledged no write after the kill")
			}

			// Every acknowledged write, read back through the survivor.
			perKind := map[string]map[string]int{}
			messages := map[string][]string{}
			for _, x := range acks {
				if perKind[x.kind] == nil {
					perKind[x.kind] = map[string]int{}
				}
				perKind[x.kind][x.via]++
				switch x.kind {
				case "listing":
					expect(t, client, b.base+"/livestock/v1/listings/"+x.id, farmer, nil)
				case "load":
					expect(t, client, b.base+"/logistics/v1/loads/"+x.id, farmer, nil)
				case "file":
					expect(t, client, b.base+"/system/v1/files/"+x.id+"/info", farmer, nil)
					expect(t, client, b.base+"/system/v1/files/"+x.id, farmer, &x.sum)
				case "message":
					messages[x.id] = append(messages[x.id], x.text)
				}
			}
			for conv, texts := range messages {
				_, _, body, _ := do(ctx, client, http.MethodGet, b.base+"/system/v1/conversations/"+conv, buyer, "", nil)
				for _, text := range texts {
					if !bytes.Contains(body, []byte(`"message":"`+text+`"`)) {
						t.Errorf("acknowledged message %q is missing from conversation %s", text, conv)
					}
				}
			}
			var lines []string
			for kind, by := range perKind {
				lines = append(lines, fmt.Sprintf("%-8s a %4d  b %4d", kind, by[a.name], by[b.name]))
			}
			sort.Strings(lines)
			t.Logf("acknowledged writes, all found afterwards (%d in total, %d by b after a was killed; %d requests to a got no answer):\n  %s",
				len(acks), afterKill, failures[a.name], strings.Join(lines, "\n  "))
		})
	}
}

// expect GETs url and fails the test unless it answers 200 (and, with sum, a
// body of that SHA-256).
func expect(t *testing.T, client *http.Client, url, token string, sum *[32]byte) {
	t.Helper()
	status, _, body, err := do(context.Background(), client, http.MethodGet, url, token, "", nil)
	if err != nil || status != http.StatusOK {
		t.Errorf("acknowledged write not found: GET %s: %d %v %.200s", url, status, err, body)
		return
	}
	if sum != nil && sha256.Sum256(body) != *sum {
		t.Errorf("GET %s: the bytes differ from the upload", url)
	}
}
