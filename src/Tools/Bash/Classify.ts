// placeholder until the classifier lands
import type { Location, ToolKind } from "../../Presentation/Intent.js"
export const classify = (_command: string, _cwd: string): { readonly kind: ToolKind; readonly locations: ReadonlyArray<Location> } => ({ kind: "execute", locations: [] })
