package io.nearstream.client;

import java.util.Locale;

/**
 * How a push subscription's slots carry records (docs/shm-layout.md, "View slots"): the last field
 * of PushSubscribe, fixed for the subscription's life.
 *
 * <ul>
 *   <li>{@link #BINARY}: the broker's push thread copies every record into the slot (an Arrow
 *       {@code binary} column); the consumer needs nothing but the region.
 *   <li>{@link #BINARY_VIEW}: the slot holds a 16-byte Arrow {@code BinaryView} per record that
 *       points into segment files the consumer maps read-only; the push thread copies no record
 *       longer than 12 bytes that lives in such a file.
 * </ul>
 */
public enum SlotFormat {
    BINARY(0, "binary"),
    BINARY_VIEW(1, "binary-view");

    /** The u8 of PushSubscribe and the region header's {@code slot_format}. */
    public final int code;

    private final String configText;

    SlotFormat(int code, String configText) {
        this.code = code;
        this.configText = configText;
    }

    /** The spelling of a configuration value: {@code binary} or {@code binary-view}. */
    public String configText() {
        return configText;
    }

    /**
     * The format of a configuration value, {@code binary} or {@code binary-view} (case and
     * surrounding blanks ignored).
     *
     * @throws IllegalArgumentException for any other text
     */
    public static SlotFormat parse(String text) {
        String t = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
        for (SlotFormat f : values()) {
            if (f.configText.equals(t)) {
                return f;
            }
        }
        throw new IllegalArgumentException(
                "unknown slot format '" + text + "' (expected 'binary' or 'binary-view')");
    }

    /**
     * The format of a wire code.
     *
     * @throws IllegalArgumentException for a code no format has
     */
    public static SlotFormat fromCode(int code) {
        for (SlotFormat f : values()) {
            if (f.code == code) {
                return f;
            }
        }
        throw new IllegalArgumentException("unknown slot format code " + code);
    }
}
