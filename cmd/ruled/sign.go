package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ruled-dev/ruled/host/trust"
)

// cmdKeygen is `ruled keygen --out FILE [--id ID]`: a new ed25519 key,
// its private half in FILE (0600, never written over), its public half
// printed as the config trusts it.
func cmdKeygen(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keygen", stderr)
	out := fs.String("out", "", "the private key file to write (required; 0600, not written over)")
	id := fs.String("id", "", "the key's id, as configs trust and revoke it (default: from its public key's hash)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *out == "" || len(pos) != 0 {
		return usageError("keygen: want --out FILE")
	}
	k, err := trust.Generate(*id, nil)
	if err != nil {
		return usageError("keygen: " + err.Error())
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if _, err := f.Write(trust.MarshalKey(k)); err != nil {
		f.Close()
		return fmt.Errorf("keygen: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	fmt.Fprintln(stdout, k.Public().String())
	return nil
}

// cmdSign is `ruled sign --key FILE PATH...`: a detached signature
// (PATH.sig) for each module or rule file.
func cmdSign(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sign", stderr)
	keyFile := fs.String("key", "", "the private key file (ruled keygen's)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *keyFile == "" || len(pos) == 0 {
		return usageError("sign: want --key FILE and the files to sign")
	}
	b, err := os.ReadFile(*keyFile)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	k, err := trust.ParseKey(b)
	if err != nil {
		return fmt.Errorf("sign: %s: %w", *keyFile, err)
	}
	for _, p := range pos {
		if strings.HasSuffix(p, trust.SigSuffix) {
			return usageError("sign: " + p + " is a signature: sign the file beside it")
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		if err := os.WriteFile(p+trust.SigSuffix, k.Sign(p, content).Marshal(), 0o644); err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		fmt.Fprintf(stdout, "%s%s: signed by %s\n", p, trust.SigSuffix, k.ID)
	}
	return nil
}

// cmdVerify is `ruled verify --trust KEY... [--revoke ID]... PATH...`:
// whether each file is signed by a trusted key, and why not.
func cmdVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("verify", stderr)
	keyring := keyringFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	ring, err := keyring()
	if err != nil {
		return usageError("verify: " + err.Error())
	}
	if ring == nil || len(pos) == 0 {
		return usageError("verify: want --trust KEY and the files to check")
	}
	bad := 0
	for _, p := range pos {
		content, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		sig, err := trust.ReadSig(p)
		if err != nil {
			// Said and counted like any refusal: every file is named.
			bad++
			fmt.Fprintln(stdout, &trust.Error{File: p, Reason: trust.ReasonMalformed, Detail: "its signature file: " + err.Error()})
			continue
		}
		key, err := ring.Verify(p, content, sig)
		if err != nil {
			bad++
			fmt.Fprintln(stdout, err)
			continue
		}
		fmt.Fprintf(stdout, "%s: signed by %s\n", p, key)
	}
	if bad > 0 {
		return fmt.Errorf("verify: %d of %d files not trusted", bad, len(pos))
	}
	return nil
}

// keyringFlags declares --trust (repeatable) and --revoke (repeatable) on
// fs; the function it returns reads them into a Keyring once fs is parsed:
// nil, nil when no key was given.
func keyringFlags(fs *flag.FlagSet) func() (*trust.Keyring, error) {
	var keys, revoked []string
	fs.Func("trust", "a trusted public key, ed25519:<id>:<base64>, as ruled keygen prints it (repeatable)", func(s string) error {
		keys = append(keys, s)
		return nil
	})
	fs.Func("revoke", "a key id no longer trusted (repeatable)", func(s string) error {
		revoked = append(revoked, s)
		return nil
	})
	return func() (*trust.Keyring, error) {
		if len(keys) == 0 {
			return nil, nil
		}
		var pubs []trust.PublicKey
		for _, s := range keys {
			p, err := trust.ParsePublicKey(s)
			if err != nil {
				return nil, err
			}
			pubs = append(pubs, p)
		}
		return trust.NewKeyring(pubs, revoked)
	}
}
