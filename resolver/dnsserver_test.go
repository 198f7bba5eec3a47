package resolver_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer is a DNS server on loopback, over UDP and TCP (Go's resolver
// goes to TCP when an answer over UDP is truncated, or when resolv.conf
// says use-vc), answering from tables that a test changes as it runs.
// Names are rooted ("svc.test."): a rooted name is asked as it is, not
// with resolv.conf's search domains, so each lookup is one question of
// each type and the questions can be counted.
type dnsServer struct {
	udp net.PacketConn
	tcp net.Listener
	wg  sync.WaitGroup

	mu      sync.Mutex
	hosts   map[string][]netip.Addr // A and AAAA records
	srvs    map[string][]net.SRV
	rcodes  map[string]dnsmessage.RCode // answer this code, and no records
	hang    map[string]bool             // never answer
	queries map[question]int
	conns   map[net.Conn]bool // TCP connections open, closed at the end
}

type question struct {
	name string
	typ  dnsmessage.Type
}

// newDNSServer starts a server, stopped when the test ends.
func newDNSServer(t *testing.T) *dnsServer {
	t.Helper()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		udp.Close()
		t.Fatal(err)
	}
	s := &dnsServer{
		udp:     udp,
		tcp:     tcp,
		hosts:   make(map[string][]netip.Addr),
		srvs:    make(map[string][]net.SRV),
		rcodes:  make(map[string]dnsmessage.RCode),
		hang:    make(map[string]bool),
		queries: make(map[question]int),
		conns:   make(map[net.Conn]bool),
	}
	s.wg.Add(2)
	go s.serveUDP()
	go s.serveTCP()
	t.Cleanup(s.close)
	return s
}

func (s *dnsServer) close() {
	s.udp.Close()
	s.tcp.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// resolver is a net.Resolver that asks s, with Go's own resolver (the
// system's cannot be pointed at a server).
func (s *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			addr := s.udp.LocalAddr().String()
			if !strings.HasPrefix(network, "udp") {
				network, addr = "tcp", s.tcp.Addr().String()
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Go's resolver stops reading an answer at its deadline (5 s
			// by default) but not when its context is canceled: closing
			// the connection then lets a closed Watch's lookup end at once.
			context.AfterFunc(ctx, func() { c.Close() })
			return c, nil
		},
	}
}

// setHost sets the A and AAAA records of name.
func (s *dnsServer) setHost(name string, ips ...string) {
	addrs := make([]netip.Addr, len(ips))
	for i, ip := range ips {
		addrs[i] = netip.MustParseAddr(ip)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[strings.ToLower(name)] = addrs
}

// setSRV sets the SRV records of name.
func (s *dnsServer) setSRV(name string, records ...net.SRV) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srvs[strings.ToLower(name)] = records
}

// remove removes every record of name: it no longer exists (NXDOMAIN).
func (s *dnsServer) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.hosts, strings.ToLower(name))
	delete(s.srvs, strings.ToLower(name))
}

// fail makes questions about name answered with code (dnsmessage.RCodeSuccess
// undoes it).
func (s *dnsServer) fail(name string, code dnsmessage.RCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == dnsmessage.RCodeSuccess {
		delete(s.rcodes, strings.ToLower(name))
	} else {
		s.rcodes[strings.ToLower(name)] = code
	}
}

// hangOn makes questions about name never answered.
func (s *dnsServer) hangOn(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang[strings.ToLower(name)] = true
}

// count returns how many questions of type typ about name were asked.
func (s *dnsServer) count(name string, typ dnsmessage.Type) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[question{strings.ToLower(name), typ}]
}

func (s *dnsServer) serveUDP() {
	defer s.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := s.udp.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if resp := s.answer(buf[:n]); resp != nil {
			s.udp.WriteTo(resp, from)
		}
	}
}

func (s *dnsServer) serveTCP() {
	defer s.wg.Done()
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serveConn(c)
	}
}

// serveConn answers the questions of one TCP connection, each message
// preceded by its length in two bytes (RFC 1035, 4.2.2).
func (s *dnsServer) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	for {
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		req := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, req); err != nil {
			return
		}
		resp := s.answer(req)
		if resp == nil {
			continue
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// answer returns the answer to the message req, or nil for none. The
// question is counted and answered under one holding of the lock, so that
// a test that saw it counted knows that a change it makes afterwards is
// not in the answer.
func (s *dnsServer) answer(req []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(q.Name.String())

	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries[question{name, q.Type}]++
	if s.hang[name] {
		return nil
	}
	hosts, isHost := s.hosts[name]
	srvs, isSRV := s.srvs[name]
	rcode, failing := s.rcodes[name]
	switch {
	case failing:
	case isHost || isSRV:
		rcode = dnsmessage.RCodeSuccess // perhaps no records of this type
	default:
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{
		ID:                 h.ID,
		Response:           true,
		Authoritative:      true,
		RecursionDesired:   h.RecursionDesired,
		RecursionAvailable: true,
		RCode:              rcode,
	})
	b.EnableCompression()
	if err := errors.Join(b.StartQuestions(), b.Question(q), b.StartAnswers()); err != nil {
		return nil
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET}
	if rcode == dnsmessage.RCodeSuccess {
		switch q.Type {
		case dnsmessage.TypeA:
			for _, ip := range hosts {
				if ip.Is4() {
					err = errors.Join(err, b.AResource(rh, dnsmessage.AResource{A: ip.As4()}))
				}
			}
		case dnsmessage.TypeAAAA:
			for _, ip := range hosts {
				if ip.Is6() {
					err = errors.Join(err, b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: ip.As16()}))
				}
			}
		case dnsmessage.TypeSRV:
			for _, r := range srvs {
				err = errors.Join(err, b.SRVResource(rh, dnsmessage.SRVResource{
					Priority: r.Priority,
					Weight:   r.Weight,
					Port:     r.Port,
					Target:   dnsmessage.MustNewName(r.Target),
				}))
			}
		}
	}
	resp, err2 := b.Finish()
	if err != nil || err2 != nil {
		return nil
	}
	return resp
}
