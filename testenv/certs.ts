/**
 * Certificates and keys for a throwaway control plane, made with the openssl command line: a CA, a serving
 * certificate for 127.0.0.1/localhost signed by it, and an RSA key that signs service account tokens.
 */
import { join } from "node:path";

export interface ControlPlaneCerts {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd, stdout: "null", stderr: "piped" }).output()
    .catch((e) => {
      throw new Error(`testenv needs the openssl command to make certificates: ${e.message}`);
    });
  if (!out.success) throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
}

/** Writes the files into `dir` and returns their paths. */
export async function makeCerts(dir: string): Promise<ControlPlaneCerts> {
  const p = (name: string) => join(dir, name);
  await openssl(["genrsa", "-out", "ca.key", "2048"], dir);
  await openssl(
    ["req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=espejo-testenv-ca", "-days", "30", "-out", "ca.crt"],
    dir,
  );
  await openssl(["genrsa", "-out", "serving.key", "2048"], dir);
  await openssl(["req", "-new", "-key", "serving.key", "-subj", "/CN=kube-apiserver", "-out", "serving.csr"], dir);
  await Deno.writeTextFile(
    p("serving.ext"),
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default\n" +
      "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n",
  );
  await openssl([
    "x509",
    "-req",
    "-in",
    "serving.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "30",
    "-extfile",
    "serving.ext",
    "-out",
    "serving.crt",
  ], dir);
  await openssl(["genrsa", "-out", "sa.key", "2048"], dir);
  await openssl(["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"], dir);
  return {
    caCert: p("ca.crt"),
    caKey: p("ca.key"),
    servingCert: p("serving.crt"),
    servingKey: p("serving.key"),
    serviceAccountKey: p("sa.key"),
    serviceAccountPub: p("sa.pub"),
  };
}
