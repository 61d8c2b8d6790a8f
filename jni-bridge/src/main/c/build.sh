#!/bin/sh
# Compiles libnearstream_jni.so. Maven runs it in process-classes (after javac -h wrote the JNI
# header); it also works by hand from jni-bridge/ after `mvn compile`:
#   sh src/main/c/build.sh target/classes/native/linux-x86_64 target/generated-headers "$JAVA_HOME/include"
# CC overrides the compiler (default gcc). libc only; -Werror keeps the build warning-free.
set -eu
out_dir=$1
headers_dir=$2
java_include=$3
here=$(dirname "$0")
mkdir -p "$out_dir"
exec "${CC:-gcc}" -std=c11 -O2 -g -fPIC -shared -fvisibility=hidden \
  -Wall -Wextra -Werror \
  -I"$headers_dir" -I"$java_include" -I"$java_include/linux" -I"$here/../../../../native/include" \
  -Wl,-z,defs -Wl,-soname,libnearstream_jni.so \
  -o "$out_dir/libnearstream_jni.so" "$here/nearstream_jni.c"
