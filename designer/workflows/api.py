"""REST endpoints (contract: the OpenAPI schema at /api/schema/). Each view parses with a serializer, calls a
selector or a service, and renders; rules live in services, scoping in selectors."""

from __future__ import annotations

import sys
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from designer.access import grants as grant_services
from designer.access.permissions import DUPLICATE_RULE, SEE_SHARING, SHARING_RULE, require_own_team_role
from designer.access.serializers import GrantSerializer
from designer.core.api import ERRORS, BaseAPIView, parse
from designer.core.api_schema import DOCUMENT_SCHEMA
from designer.core.filters import apply_filters, openapi_parameters
from designer.core.json_text import pretty_json
from designer.core.routes import routes
from designer.core.serializers import ErrorSerializer
from designer.workflows import analysis as doc_analysis
from designer.workflows import catalog
from designer.workflows import selectors as workflow_selectors
from designer.workflows import serializers as s
from designer.workflows import services as workflow_services
from designer.workflows.filters import WorkflowFilter

# --- the root ----------------------------------------------------------------


# --- teams -------------------------------------------------------------------


# --- workflows ---------------------------------------------------------------


def _workflow(request: Request, workflow_id: object) -> Any:
    return workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)


def _workflow_json(request: Request, workflow_id: object) -> dict[str, Any]:
    # Re-read through the selector so the response carries the annotations (latest_version, how it is reached).
    marked = workflow_selectors.mark_access(user=request.user, workflows=[_workflow(request, workflow_id)])
    return s.WorkflowSerializer(marked[0]).data


class WorkflowListView(BaseAPIView):
    @extend_schema(
        parameters=openapi_parameters(WorkflowFilter),
        responses={200: s.WorkflowSerializer(many=True)},
        operation_id="workflows_list",
        description="Your teams' workflows and those other teams share with yours (`shared`: true, with the "
                    "holding team and the granted role).",
    )
    def get(self, request: Request) -> Response:
        workflows = apply_filters(WorkflowFilter, request.query_params,
                                  workflow_selectors.workflows_for(user=request.user), request=request,
                                  strict=True).queryset
        marked = workflow_selectors.mark_access(user=request.user, workflows=workflows)
        return Response(s.WorkflowSerializer(marked, many=True).data)

    @extend_schema(request=s.WorkflowCreateSerializer, responses={201: s.WorkflowSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = parse(s.WorkflowCreateSerializer, request.data)
        workflow = workflow_services.create_workflow(
            actor=request.user, team=data["team"], name=data["name"], description=data["description"],
            document=data["document"],
        )
        return Response(_workflow_json(request, workflow.pk), status=status.HTTP_201_CREATED)


class WorkflowDetailView(BaseAPIView):
    @extend_schema(responses={200: s.WorkflowSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int) -> Response:
        return Response(_workflow_json(request, workflow_id))

    @extend_schema(request=s.WorkflowUpdateSerializer, responses={200: s.WorkflowSerializer, **ERRORS})
    def patch(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        data = parse(s.WorkflowUpdateSerializer, request.data)
        workflow_services.update_workflow(actor=request.user, workflow=workflow, **data)
        return Response(_workflow_json(request, workflow_id))

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, workflow_id: int) -> Response:
        workflow_services.delete_workflow(actor=request.user, workflow=_workflow(request, workflow_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkflowDuplicateView(BaseAPIView):
    @extend_schema(request=s.DuplicateSerializer, responses={201: s.WorkflowSerializer, **ERRORS},
                   description=f"Copy the current draft into the same or another team. {DUPLICATE_RULE}")
    def post(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        data = parse(s.DuplicateSerializer, request.data)
        copy = workflow_services.duplicate_workflow(actor=request.user, workflow=workflow, team=data["team"],
                                                    name=data["name"])
        return Response(_workflow_json(request, copy.pk), status=status.HTTP_201_CREATED)


class WorkflowGrantsView(BaseAPIView):
    @extend_schema(responses={200: GrantSerializer(many=True), **ERRORS}, operation_id="workflows_grants_list",
                   description=f"Teams this workflow is shared with. {SHARING_RULE}")
    def get(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        require_own_team_role(request.user, workflow, "viewer", action=SEE_SHARING)
        return Response(GrantSerializer(workflow_selectors.grants_of(workflow), many=True).data)

    @extend_schema(request=s.GrantCreateSerializer, responses={201: GrantSerializer, **ERRORS},
                   description="Share the workflow with another team (owners of its team). Sharing again with the "
                               "same team changes the role.")
    def post(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        data = parse(s.GrantCreateSerializer, request.data)
        grant = grant_services.grant_workflow(actor=request.user, workflow=workflow, team=data["team"],
                                              role=data["role"])
        return Response(GrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class WorkflowGrantView(BaseAPIView):
    @extend_schema(responses={204: None, **ERRORS}, description="Stop sharing (owners of the workflow's team).")
    def delete(self, request: Request, workflow_id: int, grant_id: int) -> Response:
        grant_services.revoke_grant(actor=request.user, workflow=_workflow(request, workflow_id), grant_id=grant_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkflowImportView(BaseAPIView):
    @extend_schema(request=s.ImportSerializer, responses={201: s.WorkflowSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = parse(s.ImportSerializer, request.data)
        workflow = workflow_services.import_workflow(actor=request.user, team=data["team"],
                                                     document=data["document"], name=data["name"])
        return Response(_workflow_json(request, workflow.pk), status=status.HTTP_201_CREATED)


class WorkflowExportView(BaseAPIView):
    # The export is the draft's document itself (a file to keep or import): typed as one, so a generated client
    # parses it into its document model rather than a bare object.
    @extend_schema(responses={(200, "application/json"): DOCUMENT_SCHEMA, **ERRORS})
    def get(self, request: Request, workflow_id: int) -> HttpResponse:
        workflow = _workflow(request, workflow_id)
        response = HttpResponse(pretty_json(workflow.document) + "\n",
                                content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{workflow.slug}.json"'
        return response


def _document_body(workflow: Any, analysis: Any) -> dict[str, Any]:
    return {
        "revision": workflow.revision,
        "document": workflow.document,
        "diagnostics": doc_analysis.diagnostics_json(analysis),
        "analysis": doc_analysis.summary(analysis),
    }


class WorkflowDocumentView(BaseAPIView):
    @extend_schema(responses={200: s.DocumentSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        # The stored draft's analysis is computed once per saved revision (the editor reloads after each edit).
        return Response(_document_body(workflow, doc_analysis.analysis_for(workflow)))

    @extend_schema(request=s.DocumentPutSerializer,
                   responses={200: s.DocumentSerializer, 409: ErrorSerializer, **ERRORS})
    def put(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        data = parse(s.DocumentPutSerializer, request.data)
        saved = workflow_services.save_document(actor=request.user, workflow=workflow, revision=data["revision"],
                                                document=data["document"])
        return Response(_document_body(saved.workflow, saved.analysis))


class WorkflowValidateView(BaseAPIView):
    read_only_safe = True  # POST only checks the document it is sent; a read-only token may call it
    def _validate(self, request: Request, workflow_id: int, document: Any) -> Response:
        workflow = _workflow(request, workflow_id)
        if document is None:
            return Response(doc_analysis.summary(doc_analysis.analysis_for(workflow)))
        parsed = doc_analysis.parse_document(document)
        return Response(doc_analysis.summary(doc_analysis.analyze_document(parsed, team=workflow.team_id)))

    @extend_schema(responses={200: s.ValidationResultSerializer, **ERRORS}, operation_id="workflows_validate_draft")
    def get(self, request: Request, workflow_id: int) -> Response:
        return self._validate(request, workflow_id, None)

    @extend_schema(request=s.ValidateSerializer, responses={200: s.ValidationResultSerializer, **ERRORS})
    def post(self, request: Request, workflow_id: int) -> Response:
        # No body checks the stored draft; a body that is not a JSON object (null, false) is a 400, as the schema says.
        data = parse(s.ValidateSerializer, request.data if not isinstance(request.data, dict) else (request.data or {}))
        return self._validate(request, workflow_id, data["document"])


class WorkflowAnalysisView(BaseAPIView):
    @extend_schema(parameters=[s.AnalysisQuerySerializer], responses={200: s.NodeAnalysisSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int) -> Response:
        workflow = _workflow(request, workflow_id)
        query = parse(s.AnalysisQuerySerializer, request.query_params)
        parsed = doc_analysis.parse_document(workflow.document)
        analysis = doc_analysis.analyze_document(parsed, team=workflow.team_id)
        return Response(doc_analysis.node_report(
            analysis, query["node"], field=query["field"] or None, want=query["want"], show_all=query["all"]
        ))


class WorkflowPublishView(BaseAPIView):
    @extend_schema(request=s.PublishSerializer, responses={201: s.VersionSerializer, **ERRORS})
    def post(self, request: Request, workflow_id: int) -> Response:
        data = parse(s.PublishSerializer, request.data or {})
        version = workflow_services.publish_workflow(actor=request.user, workflow=_workflow(request, workflow_id),
                                                     note=data.get("note", ""))
        return Response(s.VersionSerializer(version).data, status=status.HTTP_201_CREATED)


class WorkflowVersionListView(BaseAPIView):
    @extend_schema(responses={200: s.VersionSerializer(many=True), **ERRORS})
    def get(self, request: Request, workflow_id: int) -> Response:
        versions = workflow_selectors.versions_of(_workflow(request, workflow_id))
        return Response(s.VersionSerializer(versions, many=True).data)


class WorkflowVersionDetailView(BaseAPIView):
    @extend_schema(responses={200: s.VersionDetailSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int, number: int) -> Response:
        version = workflow_selectors.get_version(workflow=_workflow(request, workflow_id), number=number)
        return Response(s.VersionDetailSerializer(version).data)


# --- tasks -------------------------------------------------------------------


class TaskListView(BaseAPIView):
    @extend_schema(responses={200: s.TaskSerializer(many=True)})
    def get(self, request: Request) -> Response:
        specs = sorted(catalog.registry(), key=lambda spec: spec.name)
        return Response(s.TaskSerializer(specs, many=True).data)


urlpatterns = routes("""
    workflows/                                          WorkflowListView           workflow-list
    workflows/import/                                   WorkflowImportView         workflow-import
    workflows/<int:workflow_id>/                        WorkflowDetailView         workflow-detail
    workflows/<int:workflow_id>/duplicate/              WorkflowDuplicateView      workflow-duplicate
    workflows/<int:workflow_id>/grants/                 WorkflowGrantsView         workflow-grants
    workflows/<int:workflow_id>/grants/<int:grant_id>/  WorkflowGrantView          workflow-grant
    workflows/<int:workflow_id>/export/                 WorkflowExportView         workflow-export
    workflows/<int:workflow_id>/document/               WorkflowDocumentView       workflow-document
    workflows/<int:workflow_id>/validate/               WorkflowValidateView       workflow-validate
    workflows/<int:workflow_id>/analysis/               WorkflowAnalysisView       workflow-analysis
    workflows/<int:workflow_id>/publish/                WorkflowPublishView        workflow-publish
    workflows/<int:workflow_id>/versions/               WorkflowVersionListView    workflow-versions
    workflows/<int:workflow_id>/versions/<int:number>/  WorkflowVersionDetailView  workflow-version
    tasks/                                              TaskListView               task-list
""", sys.modules[__name__])
