package io.nearstream.flink.table;

import io.nearstream.client.RecordFilter;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.flink.annotation.Internal;
import org.apache.flink.table.expressions.CallExpression;
import org.apache.flink.table.expressions.FieldReferenceExpression;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.expressions.ValueLiteralExpression;
import org.apache.flink.table.functions.BuiltInFunctionDefinitions;
import org.apache.flink.table.functions.FunctionDefinition;
import org.apache.flink.table.types.logical.LogicalTypeRoot;

/**
 * Which SQL predicates a {@code json} table can hand to the source as a {@link
 * RecordFilter#jsonFieldIn} filter, so the broker's push thread (or the pull reader) drops the
 * records before they are decoded: {@code col = 'v'}, {@code col IN ('v1', 'v2')} and ORs of such
 * equalities on one column, where {@code col} is a physical {@code STRING}/{@code VARCHAR} column.
 *
 * <p>Why a pushed filter keeps exactly the rows Flink's own filter keeps: Flink's JSON format reads
 * column {@code col} from the top-level member of that name and turns a string member into its
 * decoded text, which is what the record filter compares (when the name repeats, the format reads
 * one of them and the record filter passes the record if any of them matches: a superset). It turns
 * a member of another JSON type into its JSON text too ({@code 5} into {@code "5"}, {@code true}
 * into {@code "true"}), which the record filter never passes; so a value that such a text could
 * equal (one starting with a digit, {@code -}, <code>{</code> or {@code [}, or {@code true}, {@code
 * false}, {@code null}) is not pushed. The predicates stay with Flink as well (the source only
 * narrows what reaches them), so a filter not pushed changes nothing but speed. The one difference:
 * a record that is not a JSON object fails the pushed filter and is dropped, where the JSON format
 * would fail the job (or skip it with {@code json.ignore-parse-errors}).
 */
@Internal
final class JsonFilterPushDown {

    private JsonFilterPushDown() {}

    /** The first of {@code filters} that can be pushed, as a record filter. */
    static Optional<Pushed> firstPushable(
            List<ResolvedExpression> filters, List<String> stringColumns) {
        for (ResolvedExpression filter : filters) {
            Set<String> values = new LinkedHashSet<>();
            String column = equalities(filter, null, values, stringColumns);
            if (column != null && values.stream().allMatch(JsonFilterPushDown::isPushableValue)) {
                try {
                    return Optional.of(
                            new Pushed(
                                    filter, RecordFilter.jsonFieldIn(column, List.copyOf(values))));
                } catch (IllegalArgumentException beyondTheWireBounds) {
                    // More values, or longer ones, than a PushSubscribe carries, or a string
                    // with no UTF-8 form (an unpaired surrogate): Flink filters.
                }
            }
        }
        return Optional.empty();
    }

    /** A predicate and the record filter that stands for it. */
    record Pushed(ResolvedExpression expression, RecordFilter filter) {}

    /**
     * The column when {@code e} is {@code column = literal}, {@code column IN (literals)} or an OR
     * of such on one column (collecting the literals into {@code values}); null otherwise.
     */
    private static String equalities(
            ResolvedExpression e, String column, Set<String> values, List<String> stringColumns) {
        if (!(e instanceof CallExpression call)) {
            return null;
        }
        FunctionDefinition f = call.getFunctionDefinition();
        List<ResolvedExpression> args = call.getResolvedChildren();
        if (f == BuiltInFunctionDefinitions.OR) {
            for (ResolvedExpression arg : args) {
                column = equalities(arg, column, values, stringColumns);
                if (column == null) {
                    return null;
                }
            }
            return column;
        }
        if (f == BuiltInFunctionDefinitions.EQUALS && args.size() == 2) {
            ResolvedExpression a = args.get(0);
            ResolvedExpression b = args.get(1);
            return a instanceof FieldReferenceExpression
                    ? fieldEquals(a, List.of(b), column, values, stringColumns)
                    : fieldEquals(b, List.of(a), column, values, stringColumns);
        }
        if (f == BuiltInFunctionDefinitions.IN && args.size() >= 2) {
            return fieldEquals(
                    args.get(0), args.subList(1, args.size()), column, values, stringColumns);
        }
        return null;
    }

    private static String fieldEquals(
            ResolvedExpression field,
            List<ResolvedExpression> literals,
            String column,
            Set<String> values,
            List<String> stringColumns) {
        if (!(field instanceof FieldReferenceExpression ref)
                || !stringColumns.contains(ref.getName())
                || (column != null && !column.equals(ref.getName()))) {
            return null;
        }
        for (ResolvedExpression literal : literals) {
            if (!(literal instanceof ValueLiteralExpression v)
                    || v.getOutputDataType().getLogicalType().getTypeRoot()
                                    != LogicalTypeRoot.VARCHAR
                            && v.getOutputDataType().getLogicalType().getTypeRoot()
                                    != LogicalTypeRoot.CHAR) {
                return null;
            }
            Optional<String> s = v.getValueAs(String.class);
            if (s.isEmpty()) {
                return null; // NULL: col = NULL is never true, nothing to push
            }
            values.add(s.get());
        }
        return ref.getName();
    }

    /** Whether no JSON value other than a string has {@code value} as its JSON text. */
    static boolean isPushableValue(String value) {
        if (value.equals("true") || value.equals("false") || value.equals("null")) {
            return false;
        }
        if (value.isEmpty()) {
            return true;
        }
        char c = value.charAt(0);
        return !(c == '-' || c == '{' || c == '[' || (c >= '0' && c <= '9'));
    }
}
