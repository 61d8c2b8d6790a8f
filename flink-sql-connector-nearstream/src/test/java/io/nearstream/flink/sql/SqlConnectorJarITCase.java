package io.nearstream.flink.sql;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.ServiceLoader;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.apache.flink.table.factories.Factory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the shaded jar holds, read from the built artifact: the table factory and its service entry,
 * the JNI classes and library under their own names, Netty, Arrow and Arrow's dependencies only
 * relocated, no Flink, and the NOTICE.
 */
class SqlConnectorJarITCase {

    private static final String FACTORY = "io.nearstream.flink.table.NearstreamDynamicTableFactory";
    private static final String SERVICES = "META-INF/services/" + Factory.class.getName();
    private static final String SHADED = "io/nearstream/shaded/";

    private static ZipFile jar;
    private static List<String> entries;

    @BeforeAll
    static void open() throws IOException {
        jar = new ZipFile(ShadedConnectorJar.path().toFile());
        entries = jar.stream().map(ZipEntry::getName).toList();
    }

    @AfterAll
    static void close() throws IOException {
        jar.close();
    }

    @Test
    void theTableFactoryIsRegisteredAsAFlinkFactory() throws IOException {
        assertThat(entries).contains(FACTORY.replace('.', '/') + ".class", SERVICES);
        assertThat(read(SERVICES).lines().map(String::strip)).contains(FACTORY);
    }

    /**
     * As Flink's SQL client finds connectors: ServiceLoader over lib/. A class loader over the
     * shaded jar and flink-table-common alone (no parent but the JDK's) finds the factory: listing
     * and instantiating it needs nothing outside the jar but Flink.
     */
    @Test
    void aClassLoaderOverTheJarAndFlinkTableCommonFindsTheNearstreamFactory() throws Exception {
        URL tableCommon = Factory.class.getProtectionDomain().getCodeSource().getLocation();
        assertThat(tableCommon.getPath()).as("flink-table-common's jar").endsWith(".jar");
        try (URLClassLoader loader =
                new URLClassLoader(
                        new URL[] {ShadedConnectorJar.path().toUri().toURL(), tableCommon},
                        ClassLoader.getPlatformClassLoader())) {
            Class<?> factoryInterface = Class.forName(Factory.class.getName(), false, loader);
            List<String> identifiers = new ArrayList<>();
            for (Object factory : ServiceLoader.load(factoryInterface, loader)) {
                identifiers.add(
                        (String) factoryInterface.getMethod("factoryIdentifier").invoke(factory));
                assertThat(factory.getClass().getClassLoader())
                        .as("the factory comes from the jars given, not the test class path")
                        .isSameAs(loader);
            }
            assertThat(identifiers).contains("nearstream");
        }
    }

    /**
     * The JNI library calls FindClass("io/nearstream/jni/NativeException") and exports
     * Java_io_nearstream_jni_* symbols: the package keeps its name, and the library is the resource
     * NativeLibrary extracts.
     */
    @Test
    void theJniClassesAndTheirNativeLibraryAreThereUnrelocated() {
        assertThat(entries)
                .contains(
                        "io/nearstream/jni/NativeException.class",
                        "io/nearstream/jni/Natives.class",
                        "io/nearstream/jni/NativeLibrary.class",
                        "native/linux-x86_64/libnearstream_jni.so");
        assertThat(entries).noneMatch(e -> e.startsWith(SHADED + "io/nearstream/"));
    }

    @Test
    void nettyArrowAndArrowsDependenciesAreOnlyThereRelocated() {
        List<String> classes = classes();
        for (String pkg :
                List.of(
                        "io/netty/",
                        "org/apache/arrow/",
                        "com/fasterxml/jackson/",
                        "com/google/flatbuffers/",
                        "org/apache/commons/codec/")) {
            assertThat(classes).as(pkg).noneMatch(c -> c.startsWith(pkg));
            // Service files are renamed with their interface (Jackson's JsonFactory, ...).
            String service = "META-INF/services/" + pkg.replace('/', '.');
            assertThat(entries).as(service).noneMatch(e -> e.startsWith(service));
            assertThat(classes).as(pkg + " relocated").anyMatch(c -> c.startsWith(SHADED + pkg));
        }
        // Arrow finds its allocation manager by class name; the name must point into the jar.
        assertThat(entries)
                .contains(SHADED + "org/apache/arrow/memory/unsafe/UnsafeAllocationManager.class");
    }

    /** Any class outside io/nearstream/ is a dependency that was bundled without relocation. */
    @Test
    void everyClassIsNearstreamsOrRelocatedUnderIt() {
        assertThat(classes()).allMatch(c -> c.startsWith("io/nearstream/"));
    }

    /** Flink's lib/ has Flink, SLF4J and the logging backend; copies here would clash. */
    @Test
    void neitherFlinkNorSlf4jIsInside() {
        assertThat(classes())
                .noneMatch(c -> c.startsWith("org/apache/flink/"))
                .noneMatch(c -> c.startsWith("org/slf4j/"))
                .noneMatch(c -> c.startsWith("org/apache/logging/"));
    }

    /**
     * The client uses NIO only, so no Netty native transport is bundled (its libraries' names
     * depend on the package name, which relocation changed), and no Netty metadata that names
     * unrelocated artifacts.
     */
    @Test
    void nettysNativeTransportsAndVersionFileAreLeftOut() {
        assertThat(entries)
                .noneMatch(e -> e.startsWith("META-INF/native/"))
                .noneMatch(e -> e.startsWith("META-INF/native-image/"))
                .doesNotContain("META-INF/io.netty.versions.properties");
    }

    @Test
    void theNoticeNamesEveryBundledArtifactWithItsVersion() throws IOException {
        assertThat(entries).contains("META-INF/NOTICE", "META-INF/licenses/LICENSE.apache-2.0.txt");
        String notice = read("META-INF/NOTICE");
        assertThat(notice).contains("Apache Software License 2.0");
        // Each bundled jar left its pom.properties: the NOTICE must follow a version upgrade.
        // JCTools is inside netty-common, which the NOTICE says.
        List<String> bundled = new ArrayList<>();
        for (String e : entries) {
            if (e.startsWith("META-INF/maven/")
                    && e.endsWith("/pom.properties")
                    && !e.startsWith("META-INF/maven/io.nearstream/")
                    && !e.startsWith("META-INF/maven/org.jctools/")) {
                Properties pom = new Properties();
                try (InputStream in = jar.getInputStream(jar.getEntry(e))) {
                    pom.load(in);
                }
                bundled.add(
                        pom.getProperty("groupId")
                                + ":"
                                + pom.getProperty("artifactId")
                                + ":"
                                + pom.getProperty("version"));
            }
        }
        assertThat(bundled)
                .as("bundled third-party artifacts")
                .anyMatch(gav -> gav.startsWith("io.netty:netty-transport:"))
                .anyMatch(gav -> gav.startsWith("org.apache.arrow:arrow-vector:"))
                .allSatisfy(gav -> assertThat(notice).as("the NOTICE").contains("- " + gav));
        assertThat(notice).contains("JCTools");
    }

    private static List<String> classes() {
        return entries.stream().filter(e -> e.endsWith(".class")).toList();
    }

    private static String read(String entry) throws IOException {
        try (InputStream in = jar.getInputStream(jar.getEntry(entry))) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
