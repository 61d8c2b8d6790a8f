"""Where the runner finds the project's binaries and jars (built by `mvn -B package`)."""
import glob
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
NATIVE_BUILD = os.environ.get("NEARSTREAM_NATIVE_BUILD", os.path.join(ROOT, "native", "build", "default"))


def binary(name):
    path = os.path.join(NATIVE_BUILD, name)
    if not os.access(path, os.X_OK):
        raise SystemExit(f"{path} not found: build first (mvn -B package -DskipTests)")
    return path


def benchmarks_jar():
    jars = [j for j in glob.glob(os.path.join(ROOT, "benchmarks", "target", "benchmarks.jar"))]
    if not jars:
        raise SystemExit("benchmarks/target/benchmarks.jar not found: build first "
                         "(mvn -B package -DskipTests)")
    return jars[0]


def java():
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java"
